// Package image builds the preflight container image from a commit of the
// repository, without a container engine and without a base image: the
// static binary for each platform, CA certificates, a non-root user and
// the state directory, in an OCI index. The same commit built with the same
// Go gives the same digest.
package image

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/preflightmcp/preflight/release/internal/dist"
)

// Source is the repository the labels name.
const Source = "https://github.com/preflightmcp/preflight"

// Repository is where the project publishes the image, the Helm chart's
// default; the archive names the image there, so that podman load gives it
// the name the chart runs.
const Repository = "ghcr.io/preflightmcp/preflight"

// Port is the port the default command serves on.
const Port = 8080

// Platforms are the platforms the index holds unless told otherwise.
func Platforms() []v1.Platform {
	return []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
}

// Entrypoint and Cmd are how the image runs: serve on every address with
// the configuration where the Helm chart mounts it.
func Entrypoint() []string { return []string{BinaryPath} }

// Cmd is the default command, the chart's.
func Cmd() []string {
	return []string{"serve", "-http", "0.0.0.0:" + strconv.Itoa(Port), "-config", ConfigDir + "/config.yaml"}
}

// Options say what to build. The zero value builds HEAD of the repository
// in the current directory for Platforms.
type Options struct {
	// Repo is a directory in the repository; empty means the current one.
	Repo string
	// Commit is what to build; empty means HEAD. Uncommitted changes are
	// never built: the image is of a commit.
	Commit string
	// Version is the image's version label and tag; empty means the
	// version the binary records (a tag gateway/vX.Y.Z on the commit, else
	// a pseudo-version).
	Version string
	// Platforms default to Platforms().
	Platforms []v1.Platform
	// Created is the time every file and the image carry; zero means
	// $SOURCE_DATE_EPOCH, else the commit's time.
	Created time.Time
}

// Built is an image index and what it was built from.
type Built struct {
	Index   v1.ImageIndex
	Commit  string
	Version string
	Created time.Time
}

// tagRE is an OCI tag.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Tag is the image's tag: the version without its leading v, as the chart's
// appVersion writes it.
func (b *Built) Tag() string { return strings.TrimPrefix(b.Version, "v") }

// Ref is the image's name, Repository:Tag.
func (b *Built) Ref() string { return Repository + ":" + b.Tag() }

// Build builds the image of opts.Commit for every platform.
func Build(ctx context.Context, opts Options) (*Built, error) {
	if v := opts.Version; v != "" && !tagRE.MatchString(strings.TrimPrefix(v, "v")) {
		return nil, fmt.Errorf("version %q: without its v it is the image's tag, which allows letters, digits, '.', '_' and '-' (not '+'), at most 128", v)
	}
	repo := opts.Repo
	if repo == "" {
		repo = "."
	}
	commit, err := dist.Git(ctx, repo, "rev-parse", "--verify", cmp.Or(opts.Commit, "HEAD")+"^{commit}")
	if err != nil {
		return nil, err
	}
	created := opts.Created
	if created.IsZero() {
		if created, err = dist.SourceDate(ctx, repo, commit); err != nil {
			return nil, err
		}
	}
	created = created.UTC().Truncate(time.Second)
	work, err := os.MkdirTemp("", "preflight-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "src")
	if err := dist.Checkout(ctx, repo, commit, src); err != nil {
		return nil, err
	}
	base, err := layer(baseEntries(), created)
	if err != nil {
		return nil, err
	}
	platforms := opts.Platforms
	if len(platforms) == 0 {
		platforms = Platforms()
	}
	b := &Built{Commit: commit, Version: opts.Version, Created: created}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		bin := filepath.Join(work, "preflight-"+p.OS+"-"+p.Architecture)
		if err := dist.Compile(ctx, src, p.OS, p.Architecture, opts.Version, bin); err != nil {
			return nil, err
		}
		version, err := dist.Stamped(bin, commit)
		if err != nil {
			return nil, err
		}
		if version == "" || version == "(devel)" {
			return nil, errors.New(bin + " records no version")
		}
		if b.Version == "" {
			b.Version = version
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		top, err := layer(binaryEntries(binary), created)
		if err != nil {
			return nil, err
		}
		img, err := image(p, base, top, b)
		if err != nil {
			return nil, fmt.Errorf("image for %s/%s: %w", p.OS, p.Architecture, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	b.Index = mutate.Annotations(idx, labels(b)).(v1.ImageIndex)
	return b, nil
}

// image is one platform's image: the shared base layer, the binary layer,
// and the config.
func image(p v1.Platform, base, top v1.Layer, b *Built) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: b.Created},
		Config: v1.Config{
			User:         fmt.Sprintf("%d:%d", UID, GID),
			Entrypoint:   Entrypoint(),
			Cmd:          Cmd(),
			WorkingDir:   DataDir,
			Env:          Env(),
			ExposedPorts: map[string]struct{}{strconv.Itoa(Port) + "/tcp": {}},
			Labels:       labels(b),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: b.Created}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "preflight: user, CA certificates, " + DataDir, Comment: "release/cmd/image"}},
		mutate.Addendum{Layer: top, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "preflight: " + BinaryPath, Comment: "release/cmd/image"}},
	)
}

// Env is the image's environment: state and caches under DataDir.
func Env() []string {
	return []string{"PATH=/usr/local/bin", "HOME=" + DataDir, "XDG_STATE_HOME=" + DataDir}
}

// labels are the OCI annotations of the config and the index.
func labels(b *Built) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.revision":    b.Commit,
		"org.opencontainers.image.version":     b.Version,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.title":       "preflight",
		"org.opencontainers.image.description": "The preflight MCP gateway: one MCP endpoint in front of upstream MCP servers that knows what a tool call will do before it runs.",
		"org.opencontainers.image.created":     b.Created.Format(time.RFC3339),
	}
}
