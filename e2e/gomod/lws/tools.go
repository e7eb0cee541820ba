//go:build tools

// Package tools pins the commands the test bed builds from this module.
package tools

import _ "sigs.k8s.io/lws/cmd"
