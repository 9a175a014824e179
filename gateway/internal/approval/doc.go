// Package approval holds the calls that wait for a person's approval out of
// band: on the gateway's page, where the approver signs in, rather than in
// the client, whose "accept" the agent could forge.
//
// A call the gateway confirms out of band becomes a [Request]: who made it
// (the principal), the server and tool, a digest of its arguments and a
// bounded, sanitized preview of them, its effect and the reason it is
// asked. A request is pending until a person approves or denies it on the
// page ([Service.Approve], [Service.Deny]) or it expires. An approval is
// single use: the call's retry with the same arguments by the same
// principal consumes it ([Service.Ask]) and runs; a second retry asks
// again. An approver decides only the requests of their own principal
// unless the deployer named them an admin ([Options.Admins]).
//
// A call can also wait: [Service.Wait] blocks until its request is
// decided, expires or the context ends. Decisions reach the replica that
// holds the waiting call through a [Notifier] (an in-process one by
// default, Redis pub/sub across replicas); a waiter subscribes before it
// reads the store, so no decision is missed, and reads the store again
// every [Options.Recheck] in case a notification was lost. The store is
// the truth, never the notification.
//
// How the client is told: [URLElicitation] builds the URL-mode elicitation
// of 2026-07-28 for a client that declared elicitation.url on the request
// ([SupportsURL]), [LegacyURLElicitation] the 2025-11-25 one, and
// [RetryText] the tool error for any other client; [OutcomeText] says why
// a call was not run. The page's address of a request ([Link]) holds its
// id and nothing else.
//
// A [Store] keeps the requests; [MemStore] is the bounded, expiring
// in-process one. A shared store (Redis, PostgreSQL) makes requests and
// decisions visible to every replica.
package approval
