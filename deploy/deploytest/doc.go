// Package deploytest checks the deployment files offline; it has tests only.
//
// It is a module of its own so that helm's and Kubernetes' dependencies stay
// out of the main module (it uses the main module's packages through a
// replace of ../..). `make chart-test` runs it, and `make test` after the
// main suite:
//
//   - the Dockerfile, parsed: multi-stage, golang:1.26 builder, distroless
//     or scratch final stage with a numeric non-root USER, no latest tags,
//     CGO_ENABLED=0 and -trimpath; its go build command run as written, and
//     the binaries checked static with debug/elf; .dockerignore keeps the
//     sources;
//   - the Helm chart deploy/helm/fleetgate: helm lint, and helm template
//     (helm.sh/helm/v3's action package) with variations, every manifest
//     decoded strictly into its k8s.io/api type, the security contexts,
//     probes, Secrets, HPA, PDBs, Services and NetworkPolicies checked, the
//     rendered flags run through the binaries' own parsers, the fleet
//     config through package config, the NATS authorization through
//     nats-server and against natsnode.EdgePermissions;
//   - the rendered pods run as processes (NATS with the chart's users, two
//     controllers, an edge) until ready;
//   - the Grafana dashboard deploy/grafana/fleetgate.json against the
//     metric names the code registers.
//
// The official NATS chart is not downloaded: a stand-in takes its place and
// reports the values it gets; with charts/ filled by `helm dependency
// build`, TestRealNATSChart renders the real one too.
package deploytest
