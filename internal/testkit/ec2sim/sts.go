package ec2sim

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
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
	actionAssumeRoleWithWebIdentity = "AssumeRoleWithWebIdentity"
	actionGetCallerIdentity         = "GetCallerIdentity"
)

// Session limits of AssumeRoleWithWebIdentity.
const (
	defaultSessionDuration = time.Hour
	minSessionDuration     = 15 * time.Minute
	maxSessionDuration     = 12 * time.Hour
	minSessionNameLen      = 2
	maxSessionNameLen      = 64
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
// identity token is the credential); GetCallerIdentity is, when accounts are configured. body
// is the request body as received.
func (s *Simulator) serveSTS(w http.ResponseWriter, r *http.Request, body []byte) {
	form := r.Form
	action := form.Get("Action")
	var (
		account = unknownAccount
		caller  credential
		keyID   string
		authErr *apiError
	)
	if action == actionGetCallerIdentity {
		caller, keyID, authErr = s.authenticateSTS(r, body)
		account = caller.account
	}
	s.mu.Lock()
	s.reqSeq++
	requestID := fmt.Sprintf("00000000-0000-4000-8000-%012x", s.reqSeq)
	var answer []byte
	err := authErr
	switch {
	case err != nil:
	case action == actionGetCallerIdentity:
		answer = getCallerIdentity(caller, keyID, requestID)
	default:
		if acct, ok := s.ids.roles[form.Get("RoleArn")]; ok {
			account = acct
		}
		answer, err = s.assumeRoleWithWebIdentity(form, requestID)
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
		arn = "arn:aws:iam::" + caller.account + ":user/" + keyID
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

// assumeRoleWithWebIdentity issues session credentials for a configured role. The web identity
// token is not checked beyond being present. Callers hold s.mu.
func (s *Simulator) assumeRoleWithWebIdentity(form url.Values, requestID string) ([]byte, *apiError) {
	if a := form.Get("Action"); a != actionAssumeRoleWithWebIdentity {
		return nil, clientError("InvalidAction", "Could not find operation %s for version %s", a, form.Get("Version"))
	}
	if code := s.faults.IdentityProviderError; code != "" {
		return nil, clientError(code, "Simulated identity provider failure")
	}
	var missing []string
	for _, p := range []string{"RoleArn", "RoleSessionName", "WebIdentityToken"} {
		if form.Get(p) == "" {
			missing = append(missing, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(p)))
		}
	}
	if len(missing) > 0 {
		return nil, clientError("ValidationError", "%d validation error(s) detected: %s", len(missing), strings.Join(missing, "; "))
	}
	arn, name := form.Get("RoleArn"), form.Get("RoleSessionName")
	if !validSessionName(name) {
		return nil, clientError("ValidationError",
			"1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]{2,64}", name)
	}
	dur := s.cfg.SessionDuration.Duration
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || time.Duration(n)*time.Second < minSessionDuration || time.Duration(n)*time.Second > maxSessionDuration {
			return nil, clientError("ValidationError",
				"1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value between 900 and 43200", v)
		}
		dur = time.Duration(n) * time.Second
	}
	account, ok := s.ids.roles[arn]
	if !ok {
		return nil, &apiError{status: http.StatusForbidden, code: "AccessDenied",
			message: "Not authorized to perform sts:AssumeRoleWithWebIdentity"}
	}
	expires := s.clock.Now().Add(dur).UTC().Truncate(time.Second)
	cred := credential{
		account: account, expires: expires,
		secret: s.randomString(secretAlphabet, sessionSecretLen),
		token:  s.randomString(secretAlphabet, sessionTokenLen),
	}
	_, roleName, _ := parseRoleARN(arn)
	cred.principal = "arn:aws:sts::" + account + ":assumed-role/" + roleName + "/" + name
	cred.principalID = roleID(arn) + ":" + name
	keyID := "ASIA" + s.randomString(keyAlphabet, sessionKeyIDLen)
	s.ids.sessions[keyID] = cred
	w := &xmlWriter{}
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<" + actionAssumeRoleWithWebIdentity +
		`Response xmlns="` + stsXMLNS + `">`)
	w.open(actionAssumeRoleWithWebIdentity + "Result")
	w.open("AssumedRoleUser")
	w.elem("Arn", cred.principal)
	w.elem("AssumedRoleId", cred.principalID)
	w.close("AssumedRoleUser")
	w.open("Credentials")
	w.elem("AccessKeyId", keyID)
	w.elem("SecretAccessKey", cred.secret)
	w.elem("SessionToken", cred.token)
	w.elem("Expiration", expires.Format(time.RFC3339))
	w.close("Credentials")
	w.close(actionAssumeRoleWithWebIdentity + "Result")
	w.open("ResponseMetadata")
	w.elem("RequestId", requestID)
	w.close("ResponseMetadata")
	w.WriteString("</" + actionAssumeRoleWithWebIdentity + "Response>")
	return w.Bytes(), nil
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
