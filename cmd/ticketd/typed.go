package main

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tracker"
)

// text holds a setting's text until it is decoded, so the variable
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

// decoder turns a setting's text into its config field.
type decoder interface {
	decode(text string) error
	isBool() bool
}

type boolDecoder struct{ p *bool }

func boolInto(p *bool) decoder { return boolDecoder{p} }

func (d boolDecoder) decode(text string) error {
	switch strings.ToLower(text) {
	case "on":
		*d.p = true
		return nil
	case "off":
		*d.p = false
		return nil
	}
	b, err := strconv.ParseBool(text)
	if err != nil {
		return errors.New("want on or off (or true or false)")
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
	n, err := strconv.Atoi(strings.TrimSpace(text))
	switch {
	case (err != nil || n < 0) && d.min == 0:
		return errors.New("want a whole number, 0 or more")
	case err != nil || n < d.min:
		return fmt.Errorf("want a whole number of at least %d", d.min)
	}
	*d.p = n
	return nil
}

func (countDecoder) isBool() bool { return false }

type stringDecoder struct{ p *string }

func stringInto(p *string) decoder { return stringDecoder{p} }

func (d stringDecoder) decode(text string) error { *d.p = text; return nil }

func (stringDecoder) isBool() bool { return false }

// listDecoder splits a comma-separated setting, dropping blanks; parse, if
// set, checks the text and splits it instead.
type listDecoder struct {
	p     *[]string
	parse func(string) ([]string, error)
}

func listInto(p *[]string) decoder { return listDecoder{p: p} }

// urlListInto decodes TICKETD_OAUTH_AUTHORIZATION_SERVERS: issuer URLs,
// each an absolute http(s) URL.
func urlListInto(p *[]string) decoder {
	return listDecoder{p: p, parse: server.ParseAuthorizationServers}
}

func (d listDecoder) decode(text string) error {
	if d.parse != nil {
		list, err := d.parse(text)
		if err != nil {
			return err
		}
		*d.p = list
		return nil
	}
	var out []string
	for _, s := range strings.Split(text, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	*d.p = out
	return nil
}

func (listDecoder) isBool() bool { return false }

// rateDecoder reads a tenant's requests per second; 0 turns the limit off.
type rateDecoder struct{ p *float64 }

func rateInto(p *float64) decoder { return rateDecoder{p} }

func (d rateDecoder) decode(text string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || f < 0 || math.IsNaN(f) || f > 1e9 {
		return errors.New("want a number of requests per second, 0 or more (0 turns the limit off)")
	}
	*d.p = f
	return nil
}

func (rateDecoder) isBool() bool { return false }

// concurrencyDecoder reads the tenant concurrency cap into a limits.Config
// field: unset is 0 (derived from the database pool), 0 is no cap (-1, as
// package limits reads a negative cap), else the cap.
type concurrencyDecoder struct{ p *int }

func concurrencyInto(p *int) decoder { return concurrencyDecoder{p} }

func (d concurrencyDecoder) decode(text string) error {
	if strings.TrimSpace(text) == "" {
		*d.p = 0
		return nil
	}
	if err := atLeastInto(d.p, 0).decode(text); err != nil {
		return err
	}
	if *d.p == 0 {
		*d.p = -1
	}
	return nil
}

func (concurrencyDecoder) isBool() bool { return false }

type credentialsDecoder struct{ p *tracker.Credentials }

func credentialsInto(p *tracker.Credentials) decoder { return credentialsDecoder{p} }

func (d credentialsDecoder) decode(text string) error {
	cs, err := tracker.ParseCredentials(text)
	if err != nil {
		return err
	}
	*d.p = cs
	return nil
}

func (credentialsDecoder) isBool() bool { return false }

type hostsDecoder struct{ p *[]string }

func hostsInto(p *[]string) decoder { return hostsDecoder{p} }

// decode reads a host allow-list: names or addresses, "*." only as a
// whole first label, no scheme, port or path.
func (d hostsDecoder) decode(text string) error {
	out := []string{}
	for h := range strings.SplitSeq(text, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		rest := strings.TrimPrefix(h, "*.")
		if _, err := netip.ParseAddr(strings.Trim(rest, "[]")); err == nil && rest == h {
			out = append(out, h)
			continue
		}
		if rest == "" || strings.ContainsAny(rest, "*/:@[] ") {
			return fmt.Errorf("%q: want a host name such as api.github.com or *.atlassian.net, without scheme, port or path", h)
		}
		out = append(out, h)
	}
	*d.p = out
	return nil
}

func (hostsDecoder) isBool() bool { return false }

// toolsetsDecoder reads TICKETD_TOOLSETS (mcptools.ParseToolsets).
type toolsetsDecoder struct{ p *mcptools.Toolsets }

func toolsetsInto(p *mcptools.Toolsets) decoder { return toolsetsDecoder{p} }

func (d toolsetsDecoder) decode(text string) error {
	t, err := mcptools.ParseToolsets(text)
	if err != nil {
		return err
	}
	*d.p = t
	return nil
}

func (toolsetsDecoder) isBool() bool { return false }
