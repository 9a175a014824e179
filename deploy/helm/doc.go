// Package helm holds the checks of the Helm chart in preflight/: what `helm lint`
// and `helm template` do, run with Helm's own packages, on the chart's default
// values, on each ci/*-values.yaml, on the examples of docs/deploy.md and on
// values that must be refused; then the rendered objects are decoded strictly into
// the Kubernetes API types and the config the ConfigMap carries is read by the
// gateway's own parser. The package has no other code: it is in the deploy module
// so that Helm's dependencies stay out of the gateway module.
package helm
