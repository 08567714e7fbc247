// Package supervise is leasetop run's process supervision, apart from the
// lease it runs under (internal/cli's run: flags, the lease, its messages
// and exit codes): it checks that a command can start (Check), starts it in
// a process group of its own under a guardian (Start), passes signals to
// its group (Child.Signal, Forwarded), and reports how it ended once no
// process of its tree is left (Child.Done, Exit.Code).
//
// The guardian (guardian.go) is leasetop started again as the hidden
// command run-guardian (Guardian): it stops the command's whole process
// tree when leasetop run dies, by any signal, SIGKILL included. The
// command's environment is leasetop's without its database credentials
// unless asked (Env).
//
// Its tests drive leasetop run as real processes: the supervision and the
// lease it keeps (exit codes, signals, loss, pauses, hand-over, queue,
// preempt), with internal/testkit/proctest's recorder as the command.
package supervise
