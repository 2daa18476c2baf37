package core

import (
	"fmt"
	"regexp"
	"strconv"
)

// GPUMode is how a GPU is shared. It decides which of its atoms are
// bookable (the atom rule): an exclusive GPU is itself the one atom; a MIG GPU
// exposes only its instances; a time-slice or MPS GPU only its slots.
type GPUMode string

// The GPU modes.
const (
	GPUExclusive GPUMode = "exclusive"
	GPUMIG       GPUMode = "mig"
	GPUTimeSlice GPUMode = "time-slice"
	GPUMPS       GPUMode = "mps"
)

// Valid reports whether m is a known mode.
func (m GPUMode) Valid() bool {
	switch m {
	case GPUExclusive, GPUMIG, GPUTimeSlice, GPUMPS:
		return true
	}
	return false
}

// AtomKind is what a bookable device is: a whole GPU, a MIG instance or a
// shared slot. It is the devices.kind column.
type AtomKind string

// The atom kinds.
const (
	AtomGPU  AtomKind = "gpu"
	AtomMIG  AtomKind = "mig"
	AtomSlot AtomKind = "slot"
)

// MaxSlots bounds time-slice and MPS sharing of one GPU.
const MaxSlots = 48

// migComputeSlices is how many compute slices a MIG-capable GPU has.
const migComputeSlices = 7

// migProfilePattern bounds the memory to four digits (9999 GB, far above
// any GPU's), so that no sum or conversion of it can overflow.
var migProfilePattern = regexp.MustCompile(`^([1-7])g\.([1-9][0-9]{0,3})gb$`)

// MIGProfile is a MIG instance profile such as "1g.10gb": compute slices and
// memory in GB.
type MIGProfile struct {
	Name     string
	Slices   int
	MemoryGB int
}

// ParseMIGProfile reads a profile name; NVIDIA's profiles have 1, 2, 3, 4 or
// 7 compute slices.
func ParseMIGProfile(s string) (MIGProfile, error) {
	m := migProfilePattern.FindStringSubmatch(s)
	if m == nil {
		return MIGProfile{}, Errorf(CodeInvalidArgument, "MIG profile %q is not of the form <n>g.<m>gb (n 1 to 7, m 1 to 9999)", Clip(s, 64))
	}
	slices, _ := strconv.Atoi(m[1])
	mem, _ := strconv.Atoi(m[2])
	if slices == 5 || slices == 6 {
		return MIGProfile{}, Errorf(CodeInvalidArgument, "MIG profile %q: no profile has %d compute slices", s, slices)
	}
	return MIGProfile{Name: s, Slices: slices, MemoryGB: mem}, nil
}

// GPULayout is the requested sharing of one GPU: for MIG, the instance
// profiles; for time-slice and MPS, the number of slots.
type GPULayout struct {
	Mode  GPUMode  `json:"mode"`
	MIG   []string `json:"mig,omitempty"`
	Slots int      `json:"slots,omitempty"`
}

// migMemoryGB is how many GB of MIG profiles a GPU of memoryMB holds. A
// profile's GB are GiB, as its atom's MemoryMB (1024 per GB) is, but the
// drivers report a GPU's memory a little under its profiles' sum (an H100
// 80GB shows 81559 MiB and takes 7g.80gb; an H200 shows 143771 MiB and
// takes 7g.141gb), so the GPU's MiB are rounded up to a whole GiB: an
// A100 80GB (81920 MiB) holds 80 GB of profiles, never 81.
func migMemoryGB(memoryMB int64) int64 {
	return memoryMB/1024 + min(memoryMB%1024, 1)
}

// Atom is one bookable unit a layout creates under a GPU.
type Atom struct {
	ID      string
	Kind    AtomKind
	Profile string
	// MemoryMB is the atom's share of the GPU's memory.
	MemoryMB int64
}

// Atoms validates the layout against a GPU with memoryMB of memory and
// returns the child atoms it creates (none for exclusive mode, whose atom is
// the GPU itself). IDs are "<uuid>/mig-<k>" and "<uuid>/s<k>".
func (l GPULayout) Atoms(gpuID string, memoryMB int64) ([]Atom, error) {
	switch l.Mode {
	case GPUExclusive:
		if len(l.MIG) > 0 || l.Slots != 0 {
			return nil, Errorf(CodeInvalidArgument, "exclusive mode takes no MIG profiles or slots")
		}
		return nil, nil
	case GPUMIG:
		if len(l.MIG) == 0 || l.Slots != 0 {
			return nil, Errorf(CodeInvalidArgument, "mig mode needs at least one MIG profile and no slots")
		}
		if len(l.MIG) > migComputeSlices { // each instance takes at least one slice
			return nil, Errorf(CodeInvalidArgument, "MIG layout has %d instances; a GPU has %d compute slices", len(l.MIG), migComputeSlices)
		}
		slices, memGB := 0, 0
		atoms := make([]Atom, 0, len(l.MIG))
		for k, name := range l.MIG {
			p, err := ParseMIGProfile(name)
			if err != nil {
				return nil, err
			}
			slices += p.Slices
			memGB += p.MemoryGB
			atoms = append(atoms, Atom{ID: fmt.Sprintf("%s/mig-%d", gpuID, k), Kind: AtomMIG,
				Profile: p.Name, MemoryMB: int64(p.MemoryGB) * 1024})
		}
		if slices > migComputeSlices {
			return nil, Errorf(CodeInvalidArgument, "MIG layout uses %d compute slices; a GPU has %d", slices, migComputeSlices)
		}
		if int64(memGB) > migMemoryGB(memoryMB) {
			return nil, Errorf(CodeInvalidArgument, "MIG layout uses %d GB; the GPU has %d MB (%d GB for MIG profiles)",
				memGB, memoryMB, migMemoryGB(memoryMB))
		}
		return atoms, nil
	case GPUTimeSlice, GPUMPS:
		if len(l.MIG) > 0 || l.Slots < 1 || l.Slots > MaxSlots {
			return nil, Errorf(CodeInvalidArgument, "%s mode needs 1 to %d slots and no MIG profiles", l.Mode, MaxSlots)
		}
		atoms := make([]Atom, l.Slots)
		for k := range atoms {
			atoms[k] = Atom{ID: fmt.Sprintf("%s/s%d", gpuID, k), Kind: AtomSlot,
				Profile: string(l.Mode), MemoryMB: memoryMB / int64(l.Slots)}
		}
		return atoms, nil
	}
	return nil, Errorf(CodeInvalidArgument, "unknown GPU mode %q", l.Mode)
}

// MaxNodeGPUs bounds the GPUs one node has, registered by an operator or
// reported by its daemon: the largest machines have 16, and a daemon's
// inventory (a stolen credential's, or a broken nvidia-smi's) must not
// register thousands, each bookable, in one transaction that holds the
// node.
const MaxNodeGPUs = 64

// MaxGPUUUID bounds a GPU's UUID: NVIDIA's are 40 characters
// (GPU-8f6c1b1e-…).
const MaxGPUUUID = 128

// gpuUUIDPattern is what a GPU's UUID may be made of. Not '/': the IDs of
// a GPU's atoms are "<uuid>/mig-<k>" and "<uuid>/s<k>", so a GPU named
// like one would take the place of another GPU's atom.
var gpuUUIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// ValidGPUUUID says why uuid cannot be a GPU's UUID, or nil: it is 1 to
// MaxGPUUUID letters, digits, '.', '_', ':' and '-'.
func ValidGPUUUID(uuid string) error {
	if len(uuid) > MaxGPUUUID || !gpuUUIDPattern.MatchString(uuid) {
		return Errorf(CodeInvalidArgument, "GPU uuid %q is not 1 to %d letters, digits, '.', '_', ':' or '-'",
			Clip(uuid, 64), MaxGPUUUID)
	}
	return nil
}

// migUUIDPattern is what a MIG instance's UUID may be made of: a GPU's
// characters, and '/' for the form drivers before R470 print
// ("MIG-GPU-<uuid>/<gi>/<ci>"). Never ',' or space: it goes into
// CUDA_VISIBLE_DEVICES, where a comma would name a second device.
var migUUIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

// ValidMIGUUID says why uuid cannot be a MIG instance's UUID, or nil: it
// is 1 to MaxGPUUUID letters, digits, '.', '_', ':', '/' and '-'.
func ValidMIGUUID(uuid string) error {
	if len(uuid) > MaxGPUUUID || !migUUIDPattern.MatchString(uuid) {
		return Errorf(CodeInvalidArgument, "MIG uuid %q is not 1 to %d letters, digits, '.', '_', ':', '/' or '-'",
			Clip(uuid, 64), MaxGPUUUID)
	}
	return nil
}

// MaxGPUModel bounds a GPU model's name: "NVIDIA H100 80GB HBM3" is 21
// bytes. It is compared, charged to quotas ("gpu:<model>") and written into
// events and messages (an unschedulable reason names it once per node).
const MaxGPUModel = 128

// ValidGPUModel says why model cannot be a GPU model's name, or nil: it is
// 1 to MaxGPUModel bytes of printable UTF-8.
func ValidGPUModel(model string) error {
	if model == "" || len(model) > MaxGPUModel || !Printable(model) {
		return Errorf(CodeInvalidArgument, "GPU model %q is not 1 to %d bytes of printable characters", Clip(model, 64), MaxGPUModel)
	}
	return nil
}
