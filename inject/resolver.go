package inject

import (
	"context"
	"fmt"
	"reflect"
)

// A Resolver computes one value for a tool call. Make one with
// [NewResolver]; its name is its wire key, stable across processes, so any
// replica can continue a round another began.
type Resolver struct {
	name string
	in   reflect.Type // a struct type
	out  reflect.Type
	call func(ctx context.Context, in reflect.Value) (any, error)
}

// NewResolver returns a resolver named name that computes an Out from the
// inputs described by the fields of In, a struct: `arg:"NAME"` for the tool
// argument NAME, `inject:"NAME"` for the value of the resolver NAME. Use
// struct{} for a resolver without inputs. fn may ask one question with
// [Elicit], [Sample], [SampleWithTools] or [ListRoots], and must return
// their error as it is when they return one.
//
// NewResolver panics if name is empty or In is not a struct.
func NewResolver[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) *Resolver {
	if name == "" {
		panic("inject.NewResolver: empty name")
	}
	in := reflect.TypeFor[In]()
	if in.Kind() != reflect.Struct {
		panic(fmt.Sprintf("inject.NewResolver %q: input type %v is not a struct", name, in))
	}
	return &Resolver{
		name: name,
		in:   in,
		out:  reflect.TypeFor[Out](),
		call: func(ctx context.Context, v reflect.Value) (any, error) {
			return fn(ctx, v.Interface().(In))
		},
	}
}

// Name returns the resolver's name.
func (r *Resolver) Name() string { return r.name }

// Action is how the user answered an elicitation.
type Action string

// The three outcomes of an elicitation.
const (
	Accept  Action = "accept"
	Decline Action = "decline"
	Cancel  Action = "cancel"
)

// Elicited is the outcome of a form elicitation: the action, and the
// form's data when the user accepted.
type Elicited[T any] struct {
	Action Action
	Data   T
}

// Accepted reports whether the user accepted.
func (e Elicited[T]) Accepted() bool { return e.Action == Accept }

// outcome lets the runner unwrap an Elicited of any T.
func (e Elicited[T]) outcome() (Action, any) { return e.Action, e.Data }

type elicitedOutcome interface{ outcome() (Action, any) }

var elicitedType = reflect.TypeFor[elicitedOutcome]()

// unwrapsTo reports whether a value of type out, an Elicited[T], unwraps to
// a value of type field (T).
func unwrapsTo(out, field reflect.Type) bool {
	if !out.Implements(elicitedType) || out.Kind() != reflect.Struct {
		return false
	}
	data, ok := out.FieldByName("Data")
	return ok && data.Type == field
}
