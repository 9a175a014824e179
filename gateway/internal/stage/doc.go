// Package stage holds the stages of the gateway's call path, one file
// each, as named types with a Serve method (package call compiles them into
// one chain per method). The gateway's order, outermost first:
//
//	log -> metrics -> route -> hold -> audit.refused -> disclose -> pin
//	    -> resolve -> decide -> ask -> approve -> confirmed -> audit
//	    -> redact -> (forward, with retry)
//
// A stage applies to the methods it names ([call.Scoped]); one whose
// feature is off is left out. None of them knows the transport or the
// protocol era: a stage that must ask the client does so through
// [call.Conn], and a stage that changes results changes what the stages
// after it return.
package stage

// quoteLimit bounds, in bytes, a client-supplied string quoted in an error
// or a log ([text.Clip]).
const quoteLimit = 200
