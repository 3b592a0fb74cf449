// Package gpurun runs gpuimg's GPU probe for an image and turns its answer
// into a [validate.Report] (gpuimg validate --run). It owns how the probe
// reaches the GPU: on this host, inside the image with docker or podman
// (the gpuimg binary mounted in as the probe), or as a Kubernetes Job
// manifest to apply. That is the engines' arguments, the rerun without a
// GPU when an engine cannot give a container one, reading the engines'
// errors and the image's labels, and passing the probe's progress lines
// through. The probe itself (NVML, probe.py, the checks) is validate's.
//
// Like every library package it prints nothing and reads no environment
// variable: the caller passes writers and the environment's values in.
package gpurun
