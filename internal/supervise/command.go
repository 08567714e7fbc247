package supervise

import (
	"errors"
	"io/fs"
	"os/exec"
	"syscall"
)

// Check makes sure, before leasetop run touches the database, that name
// (the command's argv[0]) names a program it can start: found (in PATH
// when it has no slash), not a directory, executable by this user. A typo
// must not preempt, ask, queue or even acquire. Otherwise it returns a
// *StartError with the shell's exit code for it, 127 not found or 126 not
// executable, and the reason without the name. (What exec itself may still
// refuse, such as a file that is no program, Start reports.)
func Check(name string) error {
	_, err := exec.LookPath(name)
	if err == nil {
		return nil
	}
	code := 127
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) {
		code = 126
	}
	return &StartError{Code: code, Reason: commandProblem(err)}
}

// commandProblem is the reason in LookPath's error, without its repetition
// of the name.
func commandProblem(err error) string {
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, syscall.EISDIR) {
		return "it is a directory"
	}
	return err.Error()
}
