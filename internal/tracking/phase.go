package tracking

// Units of a vault copy's phase: the copy's progress counts vaultCopyUnits of its 100, its
// lock and the removal of the share vaultStepUnits each.
const (
	vaultCopyUnits = 80
	vaultStepUnits = 10
)

// phase is how far one copy of an operation's completed source has come.
type phase struct {
	units int64 // of 100
	done  bool
	// err, when set, fails the operation.
	err string
	// desc says what the phase waits for, or (done) what it made.
	desc string
	// busy says a vault copy is still being made, locked or its source's share removed: the
	// operation does not end before, even when another phase fails.
	busy bool
}
