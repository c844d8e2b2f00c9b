package vnfpkg

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Summary returns the LCM summary of the VNFD (a copy).
func (p *Package) Summary() *model.Vnfd {
	b, err := json.Marshal(p.summary)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	var out model.Vnfd
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return &out
}

// VnfdFiles lists the files making up the VNFD: TOSCA.meta (when present),
// the entry definitions and every file it imports from the package, sorted.
// They are what GET /vnf_packages/{id}/vnfd returns.
func (p *Package) VnfdFiles() []string { return slices.Clone(p.vnfdFiles) }

// Scripts lists the files under Scripts/.
func (p *Package) Scripts() []string {
	var out []string
	for _, n := range p.names {
		if strings.HasPrefix(n, "Scripts/") {
			out = append(out, n)
		}
	}
	return out
}

// Checksum is a SOL005 Checksum.
type Checksum struct {
	Algorithm string `json:"algorithm"`
	Hash      string `json:"hash"`
}

// SoftwareImage is a SOL005 VnfPackageSoftwareImageInfo without createdAt
// and userMetadata, which the package API adds.
type SoftwareImage struct {
	ID              string   `json:"id"` // the VDU or storage node
	Name            string   `json:"name"`
	Provider        string   `json:"provider"`
	Version         string   `json:"version"`
	Checksum        Checksum `json:"checksum"`
	ContainerFormat string   `json:"containerFormat"`
	DiskFormat      string   `json:"diskFormat"`
	MinDisk         int64    `json:"minDisk"`
	MinRAM          int64    `json:"minRam"`
	Size            int64    `json:"size"`
	ImagePath       string   `json:"imagePath"`
}

// SoftwareImages lists the software images of every VDU and storage, over
// all flavours (one per node id).
func (p *Package) SoftwareImages() []SoftwareImage {
	seen := map[string]bool{}
	var out []SoftwareImage
	add := func(id string, img *model.SwImage) {
		if img == nil || seen[id] {
			return
		}
		seen[id] = true
		out = append(out, SoftwareImage{ID: id, Name: img.Name, Provider: p.summary.Provider, Version: img.Version,
			Checksum:        Checksum{Algorithm: img.ChecksumAlg, Hash: img.Checksum},
			ContainerFormat: strings.ToUpper(img.ContainerFormat), DiskFormat: strings.ToUpper(img.DiskFormat),
			MinDisk: img.MinDisk, MinRAM: img.MinRAM, Size: img.Size, ImagePath: img.File})
	}
	for _, fid := range sortedKeys(p.summary.Flavours) {
		fl := p.summary.Flavours[fid]
		for _, id := range sortedKeys(fl.VDUs) {
			add(id, fl.VDUs[id].SwImage)
		}
		for _, id := range sortedKeys(fl.Storages) {
			add(id, fl.Storages[id].SwImage)
		}
	}
	return out
}

// Artifacts lists the artifacts TOSCA.meta and the manifest declare (one per
// path, TOSCA.meta first), for the package's additionalArtifacts.
func (p *Package) Artifacts() []ArtifactEntry {
	var out []ArtifactEntry
	seen := map[string]bool{}
	var lists [][]ArtifactEntry
	if p.meta != nil {
		lists = append(lists, p.meta.Artifacts)
	}
	if p.manifest != nil {
		lists = append(lists, p.manifest.Entries)
	}
	for _, l := range lists {
		for _, a := range l {
			if seen[a.Source] {
				continue
			}
			seen[a.Source] = true
			out = append(out, a)
		}
	}
	return out
}
