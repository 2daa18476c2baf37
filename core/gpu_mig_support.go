package core

import (
	"strings"
	"unicode"
)

// migProducts are the GPU products that can be partitioned with MIG, by
// the product word of their model's name ("H100-80GB", "A100-SXM4-80GB",
// "a100"), with their compute slices: the A30 has 4, the others 7. Every
// other product (L4, L40S, T4, RTX…) has none: nvidia-smi reports its MIG
// mode as N/A.
var migProducts = map[string]int{
	"A30":  4,
	"A100": 7, "A800": 7,
	"H100": 7, "H800": 7, "H20": 7, "H200": 7, "GH200": 7,
	"B100": 7, "B200": 7, "GB200": 7, "B300": 7, "GB300": 7,
}

// MIGComputeSlices is how many MIG compute slices a GPU of this model has,
// 0 when it cannot do MIG. reported is what the GPU's node daemon found
// (devices.mig_capable): false is final, whatever the model says; true
// with a model the list does not know is a GPU with the usual 7. nil (an
// operator registered the GPU and no daemon has reported it, or a daemon
// older than the report) leaves it to the model's name: one of
// migProducts, as a word of the name in any case.
func MIGComputeSlices(model string, reported *bool) int {
	if reported != nil && !*reported {
		return 0
	}
	words := strings.FieldsFunc(model, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if n, ok := migProducts[strings.ToUpper(w)]; ok {
			return n
		}
	}
	if reported != nil {
		return migComputeSlices
	}
	return 0
}

// CheckMIGSupport refuses a MIG layout on a GPU that cannot make it: one
// without MIG (MIGComputeSlices is 0), or one with fewer compute slices
// than the layout's instances take (an A30's 4). Atoms has checked the
// profiles and the 7 slices of the largest GPUs; other layouts pass.
func (l GPULayout) CheckMIGSupport(gpuID, model string, reported *bool) error {
	if l.Mode != GPUMIG {
		return nil
	}
	have := MIGComputeSlices(model, reported)
	if have == 0 {
		why := "its model is not one with MIG and its node's daemon has not reported MIG support"
		if reported != nil {
			why = "its node's daemon reports that it has no MIG (nvidia-smi: MIG mode N/A)"
		}
		return Errorf(CodeInvalidArgument, "GPU %s (model %s) cannot be partitioned with MIG: %s; "+
			"share it with time-slice or mps instead", gpuID, Clip(model, 64), why)
	}
	used := 0
	for _, name := range l.MIG {
		p, err := ParseMIGProfile(name)
		if err != nil {
			return err
		}
		used += p.Slices
	}
	if used > have {
		return Errorf(CodeInvalidArgument, "MIG layout uses %d compute slices; GPU %s (model %s) has %d",
			used, gpuID, Clip(model, 64), have)
	}
	return nil
}
