package ec2sim

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// STS Query protocol.
const (
	stsVersion = "2011-06-15"
	stsXMLNS   = "https://sts.amazonaws.com/doc/2011-06-15/"
	// stsStatsRegion is the region key Stats counts STS calls under.
	stsStatsRegion = "sts"
	// The STS actions the simulator serves.
	actionAssumeRole                = "AssumeRole"
	actionAssumeRoleWithWebIdentity = "AssumeRoleWithWebIdentity"
	actionGetCallerIdentity         = "GetCallerIdentity"
)

// Session limits of AssumeRole and AssumeRoleWithWebIdentity.
const (
	defaultSessionDuration = time.Hour
	minSessionDuration     = 15 * time.Minute
	maxSessionDuration     = 12 * time.Hour
	// maxChainedSessionDuration bounds a session that another role's session assumes (role
	// chaining), whatever the role allows.
	maxChainedSessionDuration = time.Hour
	minSessionNameLen         = 2
	maxSessionNameLen         = 64
)

// Lengths of the session credentials STS issues.
const (
	sessionKeyIDLen  = 16 // after the "ASIA" prefix
	sessionSecretLen = 40
	sessionTokenLen  = 356
	roleIDLen        = 17 // after the "AROA" prefix
	userIDLen        = 17 // after the "AIDA" prefix
)

// keyAlphabet is the alphabet of access key IDs; secretAlphabet that of secrets and tokens.
const (
	keyAlphabet    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

// isSTSRequest reports whether a Query request is for STS rather than EC2.
func isSTSRequest(form url.Values) bool {
	return form.Get("Version") == stsVersion || form.Get("Action") == actionAssumeRoleWithWebIdentity
}

// serveSTS answers an STS Query request. AssumeRoleWithWebIdentity is not signed (the web
// identity token is the credential); GetCallerIdentity and AssumeRole are, when accounts are
// configured. body is the request body as received.
func (s *Simulator) serveSTS(w http.ResponseWriter, r *http.Request, body []byte) {
	form := r.Form
	action := form.Get("Action")
	var (
		caller  = credential{account: unknownAccount}
		keyID   string
		authErr *apiError
	)
	if action == actionGetCallerIdentity || action == actionAssumeRole {
		caller, keyID, authErr = s.authenticateSTS(r, body)
	}
	s.mu.Lock()
	s.reqSeq++
	requestID := fmt.Sprintf("00000000-0000-4000-8000-%012x", s.reqSeq)
	account := caller.account
	if role, ok := s.ids.roles[form.Get("RoleArn")]; ok && action != actionGetCallerIdentity {
		account = role.Account // an assumption is counted in the role's account
	}
	var answer []byte
	err := authErr
	switch {
	case err != nil:
	case action == actionGetCallerIdentity:
		answer = getCallerIdentity(caller, keyID, requestID)
	case action == actionAssumeRole:
		answer, err = s.assumeRole(caller, keyID, form, requestID)
	case action == actionAssumeRoleWithWebIdentity:
		answer, err = s.assumeRoleWithWebIdentity(form, requestID)
	default:
		err = clientError("InvalidAction", "Could not find operation %s for version %s", action, form.Get("Version"))
	}
	outcome := "ok"
	if err != nil {
		outcome = err.code
		answer = stsErrorDocument(err, requestID)
	}
	s.count(account, stsStatsRegion, action, outcome)
	s.mu.Unlock()
	status := http.StatusOK
	if err != nil {
		status = err.status
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID)
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// getCallerIdentity is STS's answer naming the caller: the account, the principal's ARN and its
// unique ID (for a role session "AROA…:session-name").
func getCallerIdentity(caller credential, keyID, requestID string) []byte {
	arn, userID := caller.principal, caller.principalID
	if arn == "" { // a long-term key: a made-up IAM user named after it
		arn = callerPrincipal(caller, keyID)
		userID = uniqueID("AIDA", userIDLen, arn)
	}
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + actionGetCallerIdentity +
		`Response xmlns="` + stsXMLNS + `">`)
	w.open(actionGetCallerIdentity + "Result")
	w.elem("Arn", arn)
	w.elem("UserId", userID)
	w.elem("Account", caller.account)
	w.close(actionGetCallerIdentity + "Result")
	w.open("ResponseMetadata")
	w.elem("RequestId", requestID)
	w.close("ResponseMetadata")
	w.WriteString("</" + actionGetCallerIdentity + "Response>")
	return w.Bytes()
}

// sessionRequest is what AssumeRole and AssumeRoleWithWebIdentity ask for, validated as STS does.
type sessionRequest struct {
	roleARN, name string
	// duration is DurationSeconds; zero when the request does not say.
	duration time.Duration
}

// readSessionRequest validates the parameters both assumptions share and the required ones of
// each (credential, such as "WebIdentityToken", or "" for none).
func readSessionRequest(form url.Values, credential string) (sessionRequest, *apiError) {
	var missing []string
	for _, p := range []string{"RoleArn", "RoleSessionName", credential} {
		if p != "" && form.Get(p) == "" {
			missing = append(missing, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(p)))
		}
	}
	if len(missing) > 0 {
		return sessionRequest{}, clientError("ValidationError", "%d validation error(s) detected: %s", len(missing), strings.Join(missing, "; "))
	}
	req := sessionRequest{roleARN: form.Get("RoleArn"), name: form.Get("RoleSessionName")}
	if !validSessionName(req.name) {
		return req, clientError("ValidationError",
			"1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]{2,64}", req.name)
	}
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || time.Duration(n)*time.Second < minSessionDuration || time.Duration(n)*time.Second > maxSessionDuration {
			return req, clientError("ValidationError",
				"1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value between 900 and 43200", v)
		}
		req.duration = time.Duration(n) * time.Second
	}
	return req, nil
}

// accessDenied is STS's refusal of an assumption: who may not perform which IAM action on the role.
func accessDenied(who, iamAction, roleARN string) *apiError {
	return &apiError{status: http.StatusForbidden, code: "AccessDenied",
		message: fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s", who, iamAction, roleARN)}
}

// assumeRoleWithWebIdentity issues session credentials for a configured role whose trust accepts
// the web identity token's subject. The token's signature is not checked. Callers hold s.mu.
func (s *Simulator) assumeRoleWithWebIdentity(form url.Values, requestID string) ([]byte, *apiError) {
	if code := s.faults.IdentityProviderError; code != "" {
		return nil, clientError(code, "Simulated identity provider failure")
	}
	req, err := readSessionRequest(form, "WebIdentityToken")
	if err != nil {
		return nil, err
	}
	role, ok := s.ids.roles[req.roleARN]
	if !ok || s.ids.closed[role.Account] {
		return nil, &apiError{status: http.StatusForbidden, code: "AccessDenied",
			message: "Not authorized to perform sts:AssumeRoleWithWebIdentity"}
	}
	sub, ok := tokenSubject(form.Get("WebIdentityToken"))
	if !ok {
		return nil, clientError("InvalidIdentityToken", "The ID Token provided is not a valid JWT. (You may see this error if you sent an Access Token)")
	}
	if !role.Trust.trustsSubject(sub) {
		return nil, &apiError{status: http.StatusForbidden, code: "AccessDenied",
			message: "Not authorized to perform " + iamAssumeRoleWithWebIdentity}
	}
	keyID, cred := s.issueSession(role, req.name, cmp.Or(req.duration, s.cfg.SessionDuration.Duration), false)
	return assumedRoleDocument(actionAssumeRoleWithWebIdentity, keyID, cred, requestID), nil
}

// assumeRole issues session credentials of a configured role to a caller its trust names (with
// the ExternalId it asks for, and sts:TagSession for a session with transitive tags), when the
// caller's own allow-lists permit the assumption where IAM asks them: always across accounts,
// and within one when the trust names the account rather than the caller. A role's session
// assuming another role (role chaining) gets at most an hour. Callers hold s.mu.
func (s *Simulator) assumeRole(caller credential, keyID string, form url.Values, requestID string) ([]byte, *apiError) {
	req, err := readSessionRequest(form, "")
	if err != nil {
		return nil, err
	}
	who := callerARN(caller, keyID)
	role, ok := s.ids.roles[req.roleARN]
	if !ok || s.ids.closed[role.Account] {
		return nil, accessDenied(who, iamAssumeRole, req.roleARN)
	}
	if denied := role.Trust.assumeRoleDenial(caller, keyID, form.Get("ExternalId")); denied != "" {
		return nil, accessDenied(who, denied, req.roleARN)
	}
	if role.Account != caller.account || !slices.Contains(role.Trust.Principals, callerPrincipal(caller, keyID)) {
		for _, a := range []string{iamAssumeRole, iamTagSession} {
			if (a == iamAssumeRole || caller.transitiveTags) && !s.authorized(caller.account, caller.role, a) {
				return nil, accessDenied(who, a, req.roleARN)
			}
		}
	}
	duration := cmp.Or(req.duration, s.cfg.SessionDuration.Duration)
	if caller.role != "" {
		if req.duration > maxChainedSessionDuration {
			return nil, clientError("ValidationError", "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.")
		}
		duration = min(duration, maxChainedSessionDuration)
	}
	keyID, cred := s.issueSession(role, req.name, duration, caller.transitiveTags)
	return assumedRoleDocument(actionAssumeRole, keyID, cred, requestID), nil
}

// issueSession makes session credentials of role named name, lasting d on the simulator's
// clock, and returns their access key ID. Callers hold s.mu.
func (s *Simulator) issueSession(role Role, name string, d time.Duration, transitiveTags bool) (string, credential) {
	cred := credential{
		account: role.Account, expires: s.clock.Now().Add(d).UTC().Truncate(time.Second),
		secret: s.randomString(secretAlphabet, sessionSecretLen),
		token:  s.randomString(secretAlphabet, sessionTokenLen),
		role:   role.ARN, transitiveTags: transitiveTags,
	}
	_, roleName, _ := parseRoleARN(role.ARN)
	cred.principal = "arn:aws:sts::" + role.Account + ":assumed-role/" + roleName + "/" + name
	cred.principalID = roleID(role.ARN) + ":" + name
	keyID := "ASIA" + s.randomString(keyAlphabet, sessionKeyIDLen)
	s.ids.sessions[keyID] = cred
	return keyID, cred
}

// assumedRoleDocument is STS's answer to an assumption: the AssumedRoleUser and the Credentials.
func assumedRoleDocument(action, keyID string, cred credential, requestID string) []byte {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + action + `Response xmlns="` + stsXMLNS + `">`)
	w.open(action + "Result")
	w.open("AssumedRoleUser")
	w.elem("Arn", cred.principal)
	w.elem("AssumedRoleId", cred.principalID)
	w.close("AssumedRoleUser")
	w.open("Credentials")
	w.elem("AccessKeyId", keyID)
	w.elem("SecretAccessKey", cred.secret)
	w.elem("SessionToken", cred.token)
	w.elem("Expiration", cred.expires.Format(time.RFC3339))
	w.close("Credentials")
	w.close(action + "Result")
	w.open("ResponseMetadata")
	w.elem("RequestId", requestID)
	w.close("ResponseMetadata")
	w.WriteString("</" + action + "Response>")
	return w.Bytes()
}

// validSessionName applies STS's pattern [\w+=,.@-]{2,64}.
func validSessionName(name string) bool {
	if len(name) < minSessionNameLen || len(name) > maxSessionNameLen {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_+=,.@-", c)) {
			return false
		}
	}
	return true
}

// roleID is a stable, made-up unique ID for a role ARN, like IAM's "AROA…".
func roleID(arn string) string { return uniqueID("AROA", roleIDLen, arn) }

// uniqueID is a stable, made-up IAM unique ID for an ARN: prefix, then n characters.
func uniqueID(prefix string, n int, arn string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(arn))
	id := strings.ToUpper(strconv.FormatUint(h.Sum64(), 36))
	return prefix + strings.Repeat("0", n-len(id)) + id
}

// randomString draws n characters of alphabet from the simulator's random source. Callers hold
// s.mu.
func (s *Simulator) randomString(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[s.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// stsErrorDocument is STS's error body.
func stsErrorDocument(e *apiError, requestID string) []byte {
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ErrorResponse xmlns="` + stsXMLNS + `"><Error>`)
	w.elem("Type", "Sender")
	w.elem("Code", e.code)
	w.elem("Message", e.message)
	w.WriteString("</Error>")
	w.elem("RequestId", requestID)
	w.WriteString("</ErrorResponse>")
	return w.Bytes()
}
