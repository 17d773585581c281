package conformance

// SuiteVersion is the version of the check list. It moves when a check is
// added, removed or made stricter, so a plugin's "passes suite 1" keeps a
// meaning; docs/conformance.md is its spec page.
const SuiteVersion = 5

// Level says whether a check gates: a plugin conforms when no required
// check fails. An advisory failure is reported and does not gate.
type Level string

// Levels.
const (
	Required Level = "required"
	Advisory Level = "advisory"
)

// Spec is one check of the suite: its stable id, level, why it exists and
// how to fix a failure. The same words are in docs/conformance.md.
type Spec struct {
	ID    string `json:"id"`
	Level Level  `json:"level"`
	Why   string `json:"why"`
	Fix   string `json:"fix"`
}

// Check ids.
const (
	DescribeExports       = "describe.exports"
	DescribeABI           = "describe.abi"
	DescribeKindGrammar   = "describe.kind-grammar"
	DescribeSemver        = "describe.semver"
	DescribeSchema        = "describe.schema"
	DescribeCapabilities  = "describe.capabilities"
	DescribeDefaultEvery  = "describe.default-every"
	DescribeDeterministic = "describe.deterministic"
	AdmitExample          = "admit.example"
	AdmitRefusesInvalid   = "admit.refuses-invalid"
	AdmitNoFetch          = "admit.no-fetch"
	AdmitDeterministic    = "admit.deterministic"
	AdmitDestinations     = "admit.destinations"
	AdmitNamesDests       = "admit.names-destinations"
	AdmitNextCheck        = "admit.next-check"
	ObserveValidResult    = "observe.valid-result"
	ObserveWrongKind      = "observe.wrong-kind-is-error"
	ObserveFetchFailure   = "observe.fetch-failure-is-pending"
	ObserveExecFailure    = "observe.exec-failure-is-pending"
	ObserveDeterministic  = "observe.deterministic"
	ObserveNoWallClock    = "observe.no-wall-clock"
	ObserveBudget         = "observe.budget"
	ObserveDeadline       = "observe.deadline-reachable"
	StandingFirstSilent   = "standing.first-baseline-silent"
	StandingUnchanged     = "standing.unchanged"
	StandingChanged       = "standing.changed"
	RobustnessGenerated   = "robustness.generated-params"
	WakeRobust            = "wake.no-fault-on-junk"
	WakeBounded           = "wake.bounded"
	WakeDeterministic     = "wake.deterministic"
	// CasesPrefix starts the id of each case file's check: cases.<file>,
	// the file's name without .json.
	CasesPrefix = "cases."
)

// casesSpec is the template of every cases.<file> check.
var casesSpec = Spec{ID: CasesPrefix + "<file>", Level: Required,
	Why: "the author's recorded cases are how a plugin is tested against real payloads offline",
	Fix: "the case names the request, response and answer it expected; fix the plugin, or the case if the payload was recorded wrong"}

// specs is the suite, in the order it reports.
var specs = []Spec{
	{DescribeExports, Required,
		"the host calls describe, admit and observe; a module missing one cannot serve a watch",
		"export all three functions (the Go SDK does; another PDK must name them exactly)"},
	{DescribeABI, Required,
		"describe must answer JSON naming ABI vigil.predicate/v1, or the host cannot tell what contract the plugin speaks",
		`answer describe with JSON whose "abi" is "vigil.predicate/v1"`},
	{DescribeKindGrammar, Required,
		"the kind names the predicate in every watch and registry entry: 1-64 bytes of a-z 0-9 . _ -",
		"rename the kind to lower-case letters, digits, '.', '_' and '-'"},
	{DescribeSemver, Required,
		"the version tells an operator which build serves a kind, and orders upgrades",
		`give a semantic version without a leading "v": "1.0.0"`},
	{DescribeSchema, Required,
		"the host validates every watch's params against the schema before admit, and names the failing field",
		"give params_schema as a JSON Schema that compiles (draft 2020-12 unless $schema says otherwise) with no $ref outside itself"},
	{DescribeCapabilities, Required,
		"the operator grants capabilities by name; an unknown one can never be granted",
		`list only capabilities this ABI defines ("fetch", "exec"), each once`},
	{DescribeDefaultEvery, Required,
		"the host re-checks a watch at its interval; one under 1s hammers the subject, one over 24h never wakes",
		`give default_every as a Go duration between "1s" and "24h", or "" for the host's default`},
	{DescribeDeterministic, Required,
		"the host runs describe on every instance it starts and reload compares it; two answers make the kind ambiguous",
		"build describe from constants only: no clock, counter or random value"},
	{AdmitExample, Required,
		"the example is the author's known-good params; the suite and readers of the plugin start from it",
		"set describe's example (sdk.Plugin.Example) to params your admit accepts with the operator's grants"},
	{AdmitRefusesInvalid, Required,
		"a watch with bad params must be refused at registration (422 naming the field), not fail at every check",
		`say it in the schema (required, types, enum, "additionalProperties": false), or refuse in admit with invalid_params naming the field`},
	{AdmitNoFetch, Required,
		"admit is configuration only: a forge that is down at registration may be up at the next check",
		"check params and grants in admit; fetch only in observe"},
	{AdmitDeterministic, Required,
		"registration must not depend on when or how often it is tried, and one resource's partition key must not move (its watches would scatter over a cluster's nodes, each reading it)",
		"decide admit, its partition key included, from the params and grants alone: no clock, counter or random value"},
	{AdmitDestinations, Required,
		"the host checks the destinations admit names against the kind's grants and destination guard; a list off the contract is a plugin fault, and the watch is not registered",
		`name at most 16 destinations, only on an ok answer from a kind that declares fetch, each {"target": an http(s) URL or host[:port], "field"?: the param}, as docs/writing-a-plugin.md gives the grammar (sdk.Plugin.Destinations checks it)`},
	{AdmitNamesDests, Advisory,
		"a kind that fetches and names no destinations leaves a loopback, private or ungranted host to fail at every probe, until the watch expires, instead of a 422 at registration",
		"name where the watch will fetch on admit's ok answer (sdk.Plugin.Destinations: one line for a URL param)"},
	{AdmitNextCheck, Required,
		"the host arms a new watch at admit's next_check, its first check; one before the Unix epoch, after the natural deadline or on a refusal is a plugin fault, and the watch is not registered",
		"answer next_check on an ok answer only, between 1970-01-01T00:00:00Z and the deadline admit gives, from the params alone (sdk.Plugin.FirstCheck checks it); leave it out when the first probe should be at once"},
	{ObserveValidResult, Required,
		"the host holds observe's answer to the contract; an answer off it is a fault, and the watch learns nothing",
		"answer pending, settled (with outcome.result) or, for a standing kind, changed (with a baseline); no other fields"},
	{ObserveWrongKind, Required,
		"a call for another kind is a routing bug; answering pending would hide it for the life of the watch",
		"raise an error (Extism error_set, non-zero return) when the input's kind is not yours; the Go SDK does"},
	{ObserveFetchFailure, Required,
		`"I could not tell" (a timeout, a 503, a rate limit) is pending; settling it reads a network blip as a red build`,
		"answer pending with a note on every fetch failure, 429 and 5xx; settle only on what the subject itself says"},
	{ObserveExecFailure, Required,
		`a command that timed out or could not run (not granted, no workspace) says nothing about the subject; settling on it reads a missing grant as a failed deploy`,
		"answer pending with a note when vigil_exec fails or times out; settle only on the exit and output of a command that ran"},
	{ObserveDeterministic, Required,
		"the host may ask any warm instance, any number of times; the same input and the same fetch answers must give the same answer",
		"keep no state between calls in package variables; derive the answer from the input and the fetched responses"},
	{ObserveNoWallClock, Required,
		"time comes from the input's now, the host's clock; a plugin that reads the guest's clock is wrong under a fake one",
		"use the input's now (sdk.Input.Now), never time.Now"},
	{ObserveBudget, Required,
		"every call is bounded: 5s, 64 MiB and 256 KiB of output; a call past one is killed and the watch learns nothing",
		"make one bounded observation per call: no loops waiting for the subject, no unbounded buffers, small outputs"},
	{ObserveDeadline, Advisory,
		"a watch still pending at its deadline expires: a pending answer with no next_check near the natural deadline leaves the next probe, by the cadence, past it, so the host's last probe is at the deadline itself, and a timer expires instead of firing",
		"answer pending with next_check at the instant the answer can change (sdk.Pending(note).CheckAt(t)), or give admit a natural deadline that leaves room for a probe after that instant"},
	{StandingFirstSilent, Required,
		`a standing kind's first check records the baseline silently: "it exists" is not news`,
		"answer the first check (no baseline in the input) with pending and a baseline (sdk.Baseline)"},
	{StandingUnchanged, Required,
		"a standing watch lives as long as its recipient; mailing on no change would mail every interval",
		"compare the snapshot with the input's baseline and answer pending when nothing changed"},
	{StandingChanged, Advisory,
		"a change is what a standing kind exists to mail; advisory because the suite's generic body may not be a payload the plugin reads (cases files prove it for real)",
		"answer changed with the new baseline when the subject differs from the input's baseline"},
	{RobustnessGenerated, Required,
		"params come from agents and people; a crash or a hang on odd params costs a fresh instance and tells nobody anything",
		"refuse what you cannot serve in the schema or admit; never panic past the SDK, loop or grow without bound on input"},
	{WakeRobust, Required,
		"wake reads what strangers send: a signed event may still carry any body, and an error or a trap on one wakes nothing and costs a fresh instance",
		"answer no keys ({\"keys\":[]}) for an event or a body you do not read; never raise, panic or grow without bound on input (sdk.Event.DecodeBody reports false for junk)"},
	{WakeBounded, Required,
		"the host bounds wake as admit is bounded (1 s, 256 KiB of output) and takes at most 256 keys of at most 1024 bytes; an answer past either wakes nothing",
		"name only the keys of the resources the event is about, each exactly as admit names its partition_key; read the body once, with no loop over its size beyond a single pass"},
	{WakeDeterministic, Required,
		"any warm instance may be asked, any number of times: one event must name the same watches every time, or a replayed event wakes others",
		"derive the keys from the event alone: no clock, counter, random value or state kept between calls"},
}

// Specs returns the suite's checks in report order, with the template of
// the cases.<file> check last.
func Specs() []Spec {
	out := append([]Spec(nil), specs...)
	return append(out, casesSpec)
}

func specOf(id string) Spec {
	for _, s := range specs {
		if s.ID == id {
			return s
		}
	}
	s := casesSpec
	s.ID = id
	return s
}
