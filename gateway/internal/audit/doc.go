// Package audit records what each call through the gateway did: who made
// it, to which server and tool, its effect, the decision taken and why,
// who approved it, how it ended, how long it took, a digest of its
// arguments (their values only where the level asks for them, never for
// sensitive ones), what was redacted from its result (kinds and counts),
// and how often it was retried.
//
// An [Auditor] sits in the call path. Its level is chosen per effect
// ([Level]: off, summary, full). A call that must be audited (confirmed,
// destructive, or of effect delete) is written durably by [Auditor.Start]
// before the gateway forwards it, and its outcome by [Entry.End] after; a
// call whose outcome was never recorded (the gateway crashed, the store
// failed) reads back as [OutcomeUnknown]. When the store is unavailable
// such a call fails closed with an [UnavailableError]; other calls follow
// [Options.OnUnavailable]. Other calls are written after they end, in
// batches, through a bounded buffer whose drops are counted ([Stats]).
//
// A [Store] keeps the records: package sqlstore holds them in an embedded
// SQLite file (the default) or in PostgreSQL (for replicas), opened from a
// URL. [ParseFilter] reads
// the query of the audit log, [WriteJSONL] and [WriteText] export it.
package audit
