package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bins builds bin/controller and bin/edge once per test run, with the
// race detector when the test itself runs with it.
func bins(t testing.TB) (controller, edge string) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"controller", "edge"} {
		args := []string{"build", "-o", filepath.Join(dir, name)}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "../../cmd/"+name)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(dir, "controller"), filepath.Join(dir, "edge")
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a controller or edge process; start can be called again after a
// kill, with the same arguments (same id, same addresses).
type proc struct {
	t     testing.TB
	name  string
	bin   string
	args  []string
	admin string
	mu    sync.Mutex
	cmd   *exec.Cmd
	// exited is closed once the running process has been waited for;
	// exitErr is then what Wait returned.
	exited  chan struct{}
	exitErr error
	logs    string
}

func newProc(t testing.TB, name, bin, admin string, args ...string) *proc {
	logs := os.Getenv("FLEETGATE_CHAOS_LOGS") // keep the processes' logs there
	if logs == "" {
		logs = t.TempDir()
	}
	p := &proc{t: t, name: name, bin: bin, args: args, admin: "http://" + admin, logs: logs}
	t.Cleanup(func() {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.cmd = nil
		p.mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return p
}

func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	f, err := os.OpenFile(filepath.Join(p.logs, p.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

// terminate sends SIGTERM (after SIGCONT, in case it was stopped) and
// waits up to d for the process to exit; it returns how it exited.
func (p *proc) terminate(d time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("terminate %s: not running", p.name)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("terminate %s: %w", p.name, err)
	}
	select {
	case <-exited:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("terminate %s: still running %s after SIGTERM, killed", p.name, d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitErr != nil {
		return fmt.Errorf("terminate %s: %w", p.name, p.exitErr)
	}
	return nil
}

func (p *proc) signal(s syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		if err := p.cmd.Process.Signal(s); err != nil {
			p.t.Errorf("%s: signal %v: %v", p.name, s, err)
		}
	}
}

var httpc = &http.Client{Timeout: 3 * time.Second}

// getJSON GETs url and decodes the answer into out.
func getJSON(url string, out any) error {
	resp, err := httpc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out)
}

func (p *proc) leading() bool {
	var st struct {
		Leader bool `json:"leader"`
	}
	return getJSON(p.admin+"/v1/state", &st) == nil && st.Leader
}

func (p *proc) ready() bool {
	resp, err := httpc.Get(p.admin + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// poll checks cond every 20 ms until it holds or d passes.
func poll(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// switchProxy forwards TCP connections to its current target; switching
// closes every connection to the old target, as a load balancer does when
// it drops a member.
type switchProxy struct {
	ln     net.Listener
	wg     sync.WaitGroup // serve and every pipe
	mu     sync.Mutex
	target string
	closed bool
	conns  map[net.Conn]string
}

func newSwitchProxy(t testing.TB, target string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := &switchProxy{ln: ln, target: target, conns: map[net.Conn]string{}}
	sp.wg.Go(sp.serve)
	t.Cleanup(sp.close)
	return sp
}

func (sp *switchProxy) addr() string { return sp.ln.Addr().String() }

func (sp *switchProxy) serve() {
	for {
		c, err := sp.ln.Accept()
		if err != nil {
			return
		}
		sp.wg.Go(func() { sp.pipe(c) })
	}
}

func (sp *switchProxy) pipe(c net.Conn) {
	sp.mu.Lock()
	target := sp.target
	sp.mu.Unlock()
	u, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	sp.mu.Lock()
	if sp.closed || sp.target != target { // closed or switched while dialling
		sp.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	sp.conns[c], sp.conns[u] = target, target
	sp.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	<-done
	sp.mu.Lock()
	delete(sp.conns, c)
	delete(sp.conns, u)
	sp.mu.Unlock()
}

// switchTo sends new connections to target and closes the others.
func (sp *switchProxy) switchTo(target string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.target = target
	for c, to := range sp.conns {
		if to != target {
			c.Close()
		}
	}
}

// close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (sp *switchProxy) close() {
	sp.ln.Close()
	sp.mu.Lock()
	sp.closed = true
	sp.target = ""
	for c := range sp.conns {
		c.Close()
	}
	sp.mu.Unlock()
	sp.wg.Wait()
}
