// Package kubernetes holds the tests of the Kubernetes example, in a module
// of its own so that the Kubernetes API types stay out of the product's
// go.mod. The manifests are the YAML files beside it; its tests decode them
// strictly into the k8s.io/api types, check that they agree with the
// Caddyfile, the skills and xcaddy.Dockerfile, build the image (image/)
// and check it against the Dockerfile, and run the sidecar from the
// image's layers on loopback as the pod would.
package kubernetes
