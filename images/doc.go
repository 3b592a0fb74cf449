// Package images opens, writes and moves images: transports, auth, copy,
// promote, export, convert and referrers. It is the only package that
// talks to registries directly. (Work in progress: see the registry issue.)
package images
