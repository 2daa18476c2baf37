package agent

// The end of an instance a restarted daemon adopted. Its process exits on
// its own, as any instance's may, and the instance must end then, as one
// the daemon started does (instances.go), not go on showing `running`
// until its allocation ends. The daemon is not the parent of the adopted
// `runc exec` (its killed predecessor was; init reaped it), so it cannot
// wait for its exit status: it reports the end without one, and the
// control plane ends the instance `failed`.

// adoptedExitUnknown is the reason an adopted instance's end is reported
// with when its exit status is not known.
const adoptedExitUnknown = "exited after its node daemon restarted; its exit status is not known"

// endAdopted waits for the adopted instance proc to end (watchAdopted),
// and unless the daemon stopped it, forgets it and reports its end.
func (ip *instanceProcesses) endAdopted(proc *instanceProcess) {
	<-proc.done
	ip.mu.Lock()
	stopped := proc.stopping
	ip.mu.Unlock()
	if stopped {
		return // the stop reports it
	}
	ip.forgetProc(proc)
	if ip.exited != nil {
		ip.exited(proc, nil, adoptedExitUnknown)
	}
}
