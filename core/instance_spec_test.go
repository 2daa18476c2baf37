package core_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func TestInstanceSpecValidate(t *testing.T) {
	t.Parallel()
	for image, ok := range map[string]bool{
		"":                                 true,
		"busybox":                          true,
		"busybox:latest":                   true,
		"nvcr.io/nvidia/pytorch:24.05-py3": true,
		"localhost:5000/team/train_v2:1.4": true,
		"ghcr.io/org/app@sha256:" + strings.Repeat("ab", 32):   true,
		"ghcr.io/org/app:v1@sha256:" + strings.Repeat("0", 64): true,
		"../../etc":              false,
		"/abs/path":              false,
		"busybox:":               false,
		"Busybox":                false,
		"busy box":               false,
		"busybox;rm -rf /":       false,
		"team//app":              false,
		"app@sha256:short":       false,
		strings.Repeat("a", 513): false,
	} {
		err := core.InstanceSpec{Image: image}.Validate()
		require.Equal(t, ok, err == nil, "%q: %v", image, err)
		if err != nil {
			require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
		}
	}
	require.NoError(t, core.InstanceSpec{Command: strings.Repeat("x", core.MaxScript)}.Validate())
	err := core.InstanceSpec{Command: strings.Repeat("x", core.MaxScript+1)}.Validate()
	require.ErrorContains(t, err, "at most 65536")
	require.Error(t, core.InstanceSpec{Command: "echo \xff"}.Validate())
}
