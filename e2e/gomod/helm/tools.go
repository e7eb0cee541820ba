//go:build tools

// Package tools pins the commands the test bed builds from this module.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
