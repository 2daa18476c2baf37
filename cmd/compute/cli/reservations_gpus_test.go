package cli

import "testing"

func TestGpusText(t *testing.T) {
	for want, in := range map[string]struct {
		count                   int
		model, profile, slotKnd string
	}{
		"-":             {},
		"2 H100-80GB":   {count: 2, model: "H100-80GB"},
		"1 mig 1g.10gb": {count: 1, model: "A100-80GB", profile: "1g.10gb"},
		"3 time-slice":  {count: 3, slotKnd: "time-slice"},
		"4 gpu":         {count: 4},
	} {
		if got := gpusText(in.count, in.model, in.profile, in.slotKnd); got != want {
			t.Errorf("gpusText(%+v) = %q, want %q", in, got, want)
		}
	}
}
