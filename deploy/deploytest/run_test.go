package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	corev1 "k8s.io/api/core/v1"
)

// The rendered pods run: a NATS server with the chart's authorization
// file, the two controllers and an edge started with exactly the rendered
// command lines, environment and mounted files (paths moved to a temporary
// directory, listen addresses to free loopback ports). Both controllers
// become ready and exactly one leads; the edge becomes ready (caught up
// with the event stream, so its NATS user's permissions suffice); the admin
// API wants the token from the rendered Secret.
func TestRenderedPodsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := binaries(t)
	o := mustRender(t, renderOpts{values: newCreds(t).values(), stubNATS: true})

	// NATS as the bundled server would run, with the rendered users.
	auth := writeFile(t, t.TempDir(), "auth.conf", []byte(o.configMap("fg-fleetgate-nats-auth").Data["auth.conf"]))
	opts, err := server.ProcessConfigFile(auth)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}

	ctl := o.statefulSet(t, controllerName)
	var admins []string
	for i := range 2 {
		pod := fmt.Sprintf("%s-%d", controllerName, i)
		admins = append(admins, runPod(t, o, &ctl.Spec.Template, dir, pod, ns.ClientURL(), ctl.Spec.VolumeClaimTemplates))
	}
	edge := o.deployment(t, edgeName)
	edgeAdmin := runPod(t, o, &edge.Spec.Template, dir, edgeName+"-abc", ns.ClientURL(), nil)

	token := string(o.secret("fg-fleetgate-admin-token").Data["token"])
	deadline := time.Now().Add(60 * time.Second)
	leaders := 0
	for _, a := range admins {
		body := waitReady(t, a, deadline)
		var r struct{ Leader bool }
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("controller /readyz %q: %v", body, err)
		}
		if r.Leader {
			leaders++
		}
	}
	// A standby may report ready before the lease is decided: wait for one leader.
	for leaders != 1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		leaders = 0
		for _, a := range admins {
			var r struct{ Leader bool }
			_ = json.Unmarshal(get(t, a+"/readyz", ""), &r)
			if r.Leader {
				leaders++
			}
		}
	}
	if leaders != 1 {
		t.Errorf("%d controllers lead, want exactly 1", leaders)
	}
	waitReady(t, edgeAdmin, deadline)

	if code := status(t, admins[0]+"/v1/state", ""); code != http.StatusUnauthorized {
		t.Errorf("/v1/state without the token: %d, want 401", code)
	}
	if code := status(t, admins[0]+"/v1/state", token); code != http.StatusOK {
		t.Errorf("/v1/state with the rendered token: %d, want 200", code)
	}
	// Each role has its own token: the edges' is refused by the
	// controllers (and the controllers' by the edges).
	edgeToken := string(o.secret("fg-fleetgate-edge-admin-token").Data["token"])
	if edgeToken == "" || edgeToken == token {
		t.Fatalf("the edges' admin token: want one of their own")
	}
	if code := status(t, edgeAdmin+"/v1/sessions", edgeToken); code != http.StatusOK {
		t.Errorf("edge /v1/sessions with the edges' token: %d, want 200", code)
	}
	for _, a := range admins {
		for _, p := range []string{"/v1/state", "/v1/groups/default/view", "/metrics"} {
			if code := status(t, a+p, edgeToken); code != http.StatusUnauthorized {
				t.Errorf("controller %s with the edges' token: %d, want 401", p, code)
			}
		}
	}
	if code := putStatus(t, admins[0]+"/v1/groups/default/backends/evil", edgeToken, `{"url": "http://attacker.example/mcp"}`); code != http.StatusUnauthorized {
		t.Errorf("controller PUT backend with the edges' token: %d, want 401", code)
	}
	if code := status(t, edgeAdmin+"/v1/sessions", token); code != http.StatusUnauthorized {
		t.Errorf("edge /v1/sessions with the controllers' token: %d, want 401", code)
	}
}

// runPod starts the first container of a rendered pod as a process, as a
// kubelet would: its volumes written from the rendered Secrets and
// ConfigMaps (or empty), fieldRefs and $(VAR) resolved, every path under a
// mount moved into a temporary directory, ":port" listen flags moved to a
// free loopback port, the NATS URL pointed at natsURL. It returns the
// admin API's base URL.
func runPod(t *testing.T, o *objects, p *corev1.PodTemplateSpec, bindir, podName, natsURL string, claims []corev1.PersistentVolumeClaim) string {
	t.Helper()
	c := p.Spec.Containers[0]
	root := t.TempDir()
	mounts := map[string]string{} // mountPath -> local dir
	for _, m := range c.VolumeMounts {
		local := filepath.Join(root, m.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[m.MountPath] = local
		v := volume(p, m.Name)
		switch {
		case v == nil:
			if !hasClaim(claims, m.Name) {
				t.Fatalf("%s: mount %s has no volume", podName, m.Name)
			}
		case v.Secret != nil:
			s := o.secret(v.Secret.SecretName)
			if s == nil {
				t.Fatalf("%s: Secret %s is not rendered", podName, v.Secret.SecretName)
			}
			writeItems(t, local, s.Data, v.Secret.Items)
		case v.ConfigMap != nil:
			cm := o.configMap(v.ConfigMap.Name)
			if cm == nil {
				t.Fatalf("%s: ConfigMap %s is not rendered", podName, v.ConfigMap.Name)
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			writeItems(t, local, data, v.ConfigMap.Items)
		case v.EmptyDir != nil:
		default:
			t.Fatalf("%s: volume %s of an unknown kind", podName, v.Name)
		}
	}
	paths := keys(mounts)
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	relocate := func(s string) string {
		for _, mp := range paths {
			if s == mp || strings.HasPrefix(s, mp+"/") {
				return mounts[mp] + strings.TrimPrefix(s, mp)
			}
		}
		return s
	}
	var admin string
	listen := func(flag, val string) string {
		if !strings.HasPrefix(val, ":") {
			return val
		}
		addr := freePort(t)
		if flag == "admin-listen" {
			admin = "http://" + addr
		}
		return addr
	}
	var args []string
	for _, a := range c.Args {
		name, val, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		args = append(args, "--"+name+"="+relocate(listen(name, val)))
	}
	env := []string{"HOME=" + root, "PATH=" + os.Getenv("PATH")}
	resolved := map[string]string{}
	for _, e := range c.Env {
		val := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			val = map[string]string{"metadata.name": podName, "status.podIP": "127.0.0.1"}[e.ValueFrom.FieldRef.FieldPath]
		}
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" {
			val = strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10) // bytes, as the kubelet gives it
		}
		val = regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(val, func(m string) string { return resolved[m[2:len(m)-1]] })
		switch e.Name {
		case "FLEETGATE_NATS_URL":
			val = natsURL
		case "FLEETGATE_LISTEN", "FLEETGATE_ADMIN_LISTEN":
			t.Fatalf("%s: listen address in env; the test moves flags only", podName)
		}
		resolved[e.Name] = val
		env = append(env, e.Name+"="+relocate(val))
	}
	if admin == "" {
		t.Fatalf("%s: no --admin-listen", podName)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bindir, strings.TrimPrefix(c.Command[0], "/usr/local/bin/")), args...)
	cmd.Env, cmd.Dir = env, root
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", podName, lastLines(out.String(), 15))
		}
	})
	return admin
}

func hasClaim(claims []corev1.PersistentVolumeClaim, name string) bool {
	for _, c := range claims {
		if c.Name == name {
			return true
		}
	}
	return false
}

func writeItems(t *testing.T, dir string, data map[string][]byte, items []corev1.KeyToPath) {
	t.Helper()
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			t.Fatalf("volume item %s: no such key", it.Key)
		}
		writeFile(t, dir, it.Path, b)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls GET /readyz (as the readiness probe does) until 200 or
// the deadline, and returns the body.
func waitReady(t *testing.T, base string, deadline time.Time) []byte {
	t.Helper()
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not ready by the deadline: %v", base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(t *testing.T, url, token string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b
}

func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func putStatus(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
