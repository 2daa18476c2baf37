-- +goose Up
-- Whether a GPU can be partitioned with MIG, as its node's daemon found it
-- (nvidia-smi's mig.mode.current is N/A on a GPU without MIG): an
-- observation of the machine, written by the inventory reconcile, not a
-- versioned transition. NULL: no daemon has said (a GPU an operator
-- registered, or a daemon from before this column), and gpus.setMode
-- decides from the GPU's model (core.MIGComputeSlices).
ALTER TABLE devices ADD COLUMN mig_capable boolean CHECK (mig_capable IS NULL OR kind = 'gpu');

-- +goose Down
ALTER TABLE devices DROP COLUMN mig_capable;
