package verbs

import (
	"context"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/builder"
)

// Builder is a BuildKit daemon builds run on, dialled or started by
// DialBuilder.
type Builder struct {
	// Client is BuildKit's client of the daemon.
	Client *client.Client
	// Addr is the daemon's address: the one dialled, or the local one's.
	Addr string
	// Local says gpuimg started or reused its local buildkitd for it.
	Local bool
	local *builder.Local
}

// DialBuilder connects to the BuildKit daemon at addr (unix://, tcp://,
// docker-container://, kube-pod://; opts are BuildKit client options
// such as TLS) and checks it answers; with no addr it starts or reuses
// local (builder.Local.Ensure) and holds it in use until Close.
func DialBuilder(ctx context.Context, addr string, local *builder.Local, opts ...client.ClientOpt) (*Builder, error) {
	if addr != "" {
		c, err := builder.Connect(ctx, addr, opts...)
		if err != nil {
			return nil, err
		}
		return &Builder{Client: c, Addr: addr}, nil
	}
	c, err := local.Ensure(ctx)
	if err != nil {
		return nil, err
	}
	return &Builder{Client: c, Addr: local.Address(), Local: true, local: local}, nil
}

// Build builds plan on the daemon (builder.Build); provenance asked with
// builder.ProvenanceAuto names this daemon in its builder id
// (builder.DefaultBuilderID: its address, or "local" for one gpuimg
// started).
func (b *Builder) Build(ctx context.Context, req builder.Request, plan *builder.Plan) (*builder.Result, error) {
	if req.Provenance == builder.ProvenanceAuto || req.Provenance == "true" {
		addr := b.Addr
		if b.Local {
			addr = "local"
		}
		req.Provenance = builder.DefaultBuilderID(addr)
	}
	return builder.Build(ctx, b.Client, req, plan)
}

// Alive says whether the daemon still answers (builder.Alive): after a
// failed build, whether the build or the daemon failed.
func (b *Builder) Alive(ctx context.Context) bool { return builder.Alive(ctx, b.Client) }

// Close closes the client and, for the local daemon, lets other
// processes stop or restart it again.
func (b *Builder) Close() error {
	err := b.Client.Close()
	if b.local != nil {
		b.local.Release()
	}
	return err
}
