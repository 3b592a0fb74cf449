package images

import (
	"fmt"
	"strings"
)

// LoginHint is the command that logs Docker (and so gpuimg) in to a
// registry host: the cloud CLI's for Amazon ECR, Google Artifact Registry
// and Container Registry, and Azure Container Registry, else docker login.
func LoginHint(host string) string {
	h := host
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	parts := strings.Split(h, ".")
	switch {
	case len(parts) >= 6 && parts[1] == "dkr" && parts[2] == "ecr" && strings.HasPrefix(strings.Join(parts[4:], "."), "amazonaws.com"):
		// ACCOUNT.dkr.ecr.REGION.amazonaws.com[.cn]
		return fmt.Sprintf("`aws ecr get-login-password --region %s | docker login --username AWS --password-stdin %s`", parts[3], host)
	case strings.HasSuffix(h, "-docker.pkg.dev"):
		return fmt.Sprintf("`gcloud auth configure-docker %s`", h)
	case h == "gcr.io" || strings.HasSuffix(h, ".gcr.io"):
		return fmt.Sprintf("`gcloud auth configure-docker %s`", h)
	case strings.HasSuffix(h, ".azurecr.io"):
		return fmt.Sprintf("`az acr login --name %s`", parts[0])
	}
	return fmt.Sprintf("`docker login %s`", host)
}
