package core

// MaxPoolRatio is the largest overcommit ratio a pool may have, for vCPU,
// memory and disk alike: the pools table's CHECKs (migration 0006) hold
// every ratio to 1..64. The API and the CLI check it first, so that a
// ratio out of range is refused by the name of its field or flag rather
// than by the name of the rule it breaks.
const MaxPoolRatio = 64
