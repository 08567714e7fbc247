package faults_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
)

// pty is a pseudo-terminal: the test holds the master side; a program (or
// an in-process command) gets the terminal side as its stdin and stdout.
type pty struct {
	master, term *os.File

	mu  sync.Mutex
	out []byte // everything the program wrote, once readOutput runs
	wg  sync.WaitGroup
}

// openPTY opens a pseudo-terminal of cols x rows, closed when the test
// ends.
func openPTY(t *testing.T, cols, rows int) *pty {
	t.Helper()
	// Non-blocking, so the runtime's poller owns it and close ends a read.
	fd, err := syscall.Open("/dev/ptmx", syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("pty number: %v", err)
	}
	term, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	p := &pty{master: master, term: term}
	t.Cleanup(p.close)
	p.resize(t, cols, rows)
	return p
}

// resize sets the terminal's size; the kernel sends SIGWINCH to the
// terminal's foreground process group.
func (p *pty) resize(t *testing.T, cols, rows int) {
	t.Helper()
	ws := struct{ row, col, x, y uint16 }{uint16(rows), uint16(cols), 0, 0}
	if err := ioctl(p.master, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatalf("set the terminal size: %v", err)
	}
}

func ioctl(f *os.File, req uint, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// readOutput keeps reading what the program writes (a program blocks when
// nobody reads its terminal) until the pty is closed.
func (p *pty) readOutput() {
	p.wg.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := p.master.Read(buf)
			p.mu.Lock()
			p.out = append(p.out, buf[:n]...)
			p.mu.Unlock()
			if err != nil {
				return // EIO once the terminal side is closed everywhere, or closed by close
			}
		}
	})
}

// screen returns everything written so far, without escape sequences.
func (p *pty) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ansi.Strip(string(p.out))
}

// raw returns everything written so far.
func (p *pty) raw() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}

// typeKeys writes s to the terminal as if typed.
func (p *pty) typeKeys(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.master, s); err != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatalf("type %q: %v", s, err)
	}
}

// drain closes the terminal side and waits until everything written to it
// has been read; only the test may hold the terminal side open.
func (p *pty) drain() string {
	p.term.Close()
	p.wg.Wait()
	return p.raw()
}

func (p *pty) close() {
	p.term.Close()
	p.master.Close()
	p.wg.Wait()
}

// startWatch starts the real `leasetop watch args...` with p as its
// controlling terminal (stdin, stdout and stderr), its own session and an
// empty config folder, and starts reading what it draws.
func startWatch(t *testing.T, p *pty, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(leasetopBin, append([]string{"watch"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.term, p.term, p.term
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "XDG_CONFIG_HOME="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} // the pty is its controlling terminal
	w := startProc(t, cmd)
	p.readOutput()
	return w
}
