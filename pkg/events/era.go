package events

import (
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// eraListsOf encodes a backend's lists of one era as the catalog's own
// are (marshalDefs); compressed, like them, by the caller.
func eraListsOf(e *catalog.EraLists) (*eventspb.EraLists, error) {
	el := &eventspb.EraLists{Digest: e.Digest}
	var err error
	if el.Tools, err = marshalDefs(e.Tools); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if el.Resources, err = marshalDefs(e.Resources); err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	if el.Prompts, err = marshalDefs(e.Prompts); err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	if el.ResourceTemplates, err = marshalDefs(e.ResourceTemplates); err != nil {
		return nil, fmt.Errorf("resource templates: %w", err)
	}
	return el, nil
}

// eraSize is the encoded size of el's lists.
func eraSize(el *eventspb.EraLists) int {
	if el == nil {
		return 0
	}
	return len(el.Tools) + len(el.Resources) + len(el.Prompts) + len(el.ResourceTemplates)
}

// compressEra compresses el's lists.
func compressEra(el *eventspb.EraLists) {
	if el != nil {
		el.Tools, el.Resources, el.Prompts = compress(el.Tools), compress(el.Resources), compress(el.Prompts)
		el.ResourceTemplates = compress(el.ResourceTemplates)
	}
}

// eraListsFrom decodes el (read from the log) as catalogFromEvent decodes
// a catalog's own lists, with their compression comp and bounds.
func eraListsFrom(el *eventspb.EraLists, comp eventspb.Compression) (*catalog.EraLists, error) {
	e := &catalog.EraLists{Digest: el.Digest}
	var err error
	if e.Tools, err = unmarshalDefs(el.Tools, comp); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if e.Resources, err = unmarshalDefs(el.Resources, comp); err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	if e.Prompts, err = unmarshalDefs(el.Prompts, comp); err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	if e.ResourceTemplates, err = unmarshalDefs(el.ResourceTemplates, comp); err != nil {
		return nil, fmt.Errorf("resource templates: %w", err)
	}
	return e, nil
}
