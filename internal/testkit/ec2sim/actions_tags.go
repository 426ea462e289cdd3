package ec2sim

import "strings"

// taggable is a snapshot or a volume, with a way to change its tags.
type taggable struct {
	tags   map[string]string
	set    func(k, v string)
	delete func(k string)
}

func (r *region) resolveTaggable(id string) (taggable, *apiError) {
	switch {
	case strings.HasPrefix(id, "snap-"):
		sn, err := r.lookupSnapshot(id)
		if err != nil {
			return taggable{}, err
		}
		return taggable{
			tags:   sn.tags,
			set:    func(k, v string) { r.setSnapshotTag(sn, k, v) },
			delete: func(k string) { r.deleteSnapshotTag(sn, k) },
		}, nil
	case strings.HasPrefix(id, "vol-"):
		v, err := r.lookupVolume(id)
		if err != nil {
			return taggable{}, err
		}
		return taggable{
			tags:   v.tags,
			set:    func(k, val string) { v.tags[k] = val },
			delete: func(k string) { delete(v.tags, k) },
		}, nil
	}
	return taggable{}, clientError("InvalidID", "The ID '%s' is not valid", id)
}

func (r *region) resolveTaggables(q *request) ([]taggable, *apiError) {
	ids := q.list("ResourceId")
	if len(ids) == 0 {
		return nil, clientError("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	out := make([]taggable, 0, len(ids))
	for _, id := range ids {
		t, err := r.resolveTaggable(id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Simulator) createTags(r *region, q *request) ([]byte, *apiError) {
	pairs := q.tagPairs("Tag")
	if len(pairs) == 0 {
		return nil, clientError("MissingParameter", "The request must contain the parameter tagSet")
	}
	for _, t := range pairs {
		if err := validateTag(t.key, t.value); err != nil {
			return nil, err
		}
	}
	targets, err := r.resolveTaggables(q)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		merged := copyTags(t.tags)
		for _, p := range pairs {
			merged[p.key] = p.value
		}
		if len(merged) > maxTags {
			return nil, clientError("TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
		}
	}
	for _, t := range targets {
		for _, p := range pairs {
			t.set(p.key, p.value)
		}
	}
	return returnTrue(q), nil
}

func (s *Simulator) deleteTags(r *region, q *request) ([]byte, *apiError) {
	pairs := q.tagPairs("Tag")
	for _, t := range pairs {
		if strings.HasPrefix(strings.ToLower(t.key), "aws:") {
			return nil, validateTag(t.key, t.value)
		}
	}
	targets, err := r.resolveTaggables(q)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if len(pairs) == 0 {
			for k := range t.tags {
				t.delete(k)
			}
			continue
		}
		for _, p := range pairs {
			if v, ok := t.tags[p.key]; ok && (!p.hasValue || v == p.value) {
				t.delete(p.key)
			}
		}
	}
	return returnTrue(q), nil
}
