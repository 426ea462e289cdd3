package ec2sim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// xmlns is the namespace of every EC2 response.
const xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/"

// apiError is an EC2 error response.
type apiError struct {
	status        int
	code, message string
}

func clientError(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}

// request is one parsed EC2 Query request.
type request struct {
	action, region, requestID string
	// account is the caller's account; unknownAccount when authentication found none.
	account string
	// role is the role of the caller's session; empty for a long-term key.
	role string
	// authErr is authentication's verdict: nil, AuthFailure or RequestExpired.
	authErr *apiError
	params  url.Values
	now     time.Time
}

// regionOf takes the region from the SigV4 credential scope (AKID/DATE/REGION/SERVICE/aws4_request)
// in the Authorization header or the X-Amz-Credential query parameter; "us-east-1" if there is none.
func regionOf(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if auth := r.Header.Get("Authorization"); auth != "" {
		if i := strings.Index(auth, "Credential="); i >= 0 {
			cred = auth[i+len("Credential="):]
			if j := strings.IndexAny(cred, ", "); j >= 0 {
				cred = cred[:j]
			}
		}
	}
	if region := regionOfCredential(cred); region != "" {
		return region
	}
	return "us-east-1"
}

func regionOfCredential(cred string) string {
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[len(parts)-3]
}

func (q *request) get(name string) string { return q.params.Get(name) }

// list reads NAME.1, NAME.2, … until one is missing.
func (q *request) list(name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := q.params[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

func (q *request) has(name string) bool {
	_, ok := q.params[name]
	return ok
}

func (q *request) bool(name string) bool { return q.get(name) == "true" }

// int32 reads an optional integer parameter; ok is false when it is absent.
func (q *request) int32(name string) (v int32, ok bool, err *apiError) {
	s := q.get(name)
	if s == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(s, 10, 32)
	if perr != nil {
		return 0, false, clientError("InvalidParameterValue", "Value (%s) for parameter %s is invalid.", s, name)
	}
	return int32(n), true, nil
}

func (q *request) require(name string) (string, *apiError) {
	v := q.get(name)
	if v == "" {
		return "", clientError("MissingParameter", "The request must contain the parameter %s", name)
	}
	return v, nil
}

// filter is one Filter.N with its values.
type filter struct {
	name   string
	values []string
}

func (q *request) filters() []filter {
	var out []filter
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		name, ok := q.params[p+".Name"]
		if !ok {
			return out
		}
		out = append(out, filter{name: name[0], values: q.list(p + ".Value")})
	}
}

// tagPair is one Tag.N.Key / Tag.N.Value.
type tagPair struct {
	key, value string
	hasValue   bool
}

func (q *request) tagPairs(prefix string) []tagPair {
	var out []tagPair
	for i := 1; ; i++ {
		p := prefix + "." + strconv.Itoa(i)
		k, ok := q.params[p+".Key"]
		if !ok {
			return out
		}
		v, hasValue := q.params[p+".Value"]
		t := tagPair{key: k[0], hasValue: hasValue}
		if hasValue {
			t.value = v[0]
		}
		out = append(out, t)
	}
}

// tagSpecs reads the tags of TagSpecification.N entries for resourceType.
func (q *request) tagSpecs(resourceType string) (map[string]string, *apiError) {
	tags := map[string]string{}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i)
		rt, ok := q.params[p+".ResourceType"]
		if !ok {
			break
		}
		if rt[0] != resourceType {
			return nil, clientError("InvalidParameterValue",
				"'%s' is not a valid taggable resource type for this operation.", rt[0])
		}
		for _, t := range q.tagPairs(p + ".Tag") {
			tags[t.key] = t.value
		}
	}
	if err := validateTags(tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// maxTags is EC2's limit of tags per resource.
const maxTags = 50

// validateTags applies EC2's rules for tag keys and values and the per-resource limit.
func validateTags(tags map[string]string) *apiError {
	for k, v := range tags {
		if err := validateTag(k, v); err != nil {
			return err
		}
	}
	if len(tags) > maxTags {
		return clientError("TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
	}
	return nil
}

func validateTag(k, v string) *apiError {
	switch {
	case k == "":
		return clientError("InvalidParameterValue", "Tag key cannot be empty.")
	case strings.HasPrefix(strings.ToLower(k), "aws:"):
		return clientError("InvalidParameterValue",
			"Value ( %s ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use", k)
	case len([]rune(k)) > 128:
		return clientError("InvalidParameterValue",
			"Value ( %s ) for parameter key is invalid. Length exceeds maximum of 128.", k)
	case len([]rune(v)) > 256:
		return clientError("InvalidParameterValue",
			"Value ( %s ) for parameter value is invalid. Length exceeds maximum of 256.", v)
	}
	return nil
}

// xmlWriter builds an XML document by hand; it is much faster than encoding/xml reflection.
type xmlWriter struct{ bytes.Buffer }

func newResponse(action, requestID string) *xmlWriter {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + action + `Response xmlns="` + xmlns + `">`)
	w.elem("requestId", requestID)
	return w
}

func (w *xmlWriter) finish(action string) []byte {
	w.WriteString("</" + action + "Response>")
	return w.Bytes()
}

func (w *xmlWriter) open(name string) {
	w.WriteByte('<')
	w.WriteString(name)
	w.WriteByte('>')
}

func (w *xmlWriter) close(name string) {
	w.WriteString("</")
	w.WriteString(name)
	w.WriteByte('>')
}

func (w *xmlWriter) elem(name, value string) {
	w.open(name)
	if needsEscape(value) {
		_ = xml.EscapeText(w, []byte(value))
	} else {
		w.WriteString(value)
	}
	w.close(name)
}

func (w *xmlWriter) elemNonEmpty(name, value string) {
	if value != "" {
		w.elem(name, value)
	}
}

func (w *xmlWriter) int(name string, v int32) { w.elem(name, strconv.Itoa(int(v))) }

func (w *xmlWriter) bool(name string, v bool) { w.elem(name, strconv.FormatBool(v)) }

func (w *xmlWriter) time(name string, t time.Time) {
	w.elem(name, t.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// tagSet writes tags sorted by key, as <tagSet><item><key/><value/></item>…</tagSet>.
func (w *xmlWriter) tagSet(tags map[string]string) {
	if len(tags) == 0 {
		return
	}
	w.open("tagSet")
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		w.open("item")
		w.elem("key", k)
		w.elem("value", tags[k])
		w.close("item")
	}
	w.close("tagSet")
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>', '&', '\'', '"', '\r', '\n', '\t':
			return true
		}
	}
	return false
}

// errorDocument is EC2's error body.
func errorDocument(e *apiError, requestID string) []byte {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Response><Errors><Error>")
	w.elem("Code", e.code)
	w.elem("Message", e.message)
	w.WriteString("</Error></Errors>")
	w.elem("RequestID", requestID)
	w.WriteString("</Response>")
	return w.Bytes()
}
