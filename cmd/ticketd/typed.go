package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// text holds a typed setting's text until it is decoded, so the variable
// and the flag are read the same way and checked once.
type text struct {
	value  string
	isBool bool
}

func (t *text) String() string {
	if t == nil {
		return ""
	}
	return t.value
}

func (t *text) Set(v string) error { t.value = v; return nil }

// IsBoolFlag lets a switch be given alone (--read-only).
func (t *text) IsBoolFlag() bool { return t.isBool }

// decoder turns a typed setting's text into its config field.
type decoder interface {
	decode(text string) error
	isBool() bool
}

type boolDecoder struct{ p *bool }

func boolInto(p *bool) decoder { return boolDecoder{p} }

func (d boolDecoder) decode(text string) error {
	b, err := strconv.ParseBool(text)
	if err != nil {
		return errors.New("want true or false")
	}
	*d.p = b
	return nil
}

func (boolDecoder) isBool() bool { return true }

type durationDecoder struct{ p *time.Duration }

func positiveDurationInto(p *time.Duration) decoder { return durationDecoder{p} }

func (d durationDecoder) decode(text string) error {
	v, err := time.ParseDuration(text)
	if err != nil || v <= 0 {
		return errors.New("want a positive duration such as 5s")
	}
	*d.p = v
	return nil
}

func (durationDecoder) isBool() bool { return false }

type minDurationDecoder struct {
	p   *time.Duration
	min time.Duration
}

func atLeastDurationInto(p *time.Duration, minimum time.Duration) decoder {
	return minDurationDecoder{p, minimum}
}

func (d minDurationDecoder) decode(text string) error {
	v, err := time.ParseDuration(text)
	if err != nil || v < d.min {
		return fmt.Errorf("want a duration of at least %s, such as 20s", d.min)
	}
	*d.p = v
	return nil
}

func (minDurationDecoder) isBool() bool { return false }

type countDecoder struct {
	p   *int
	min int
}

func atLeastInto(p *int, minimum int) decoder { return countDecoder{p, minimum} }

func (d countDecoder) decode(text string) error {
	n, err := strconv.Atoi(text)
	if err != nil || n < d.min {
		return fmt.Errorf("want a whole number of at least %d", d.min)
	}
	*d.p = n
	return nil
}

func (countDecoder) isBool() bool { return false }
