package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// setup is parseConfig then prepare, for the long-running commands (serve,
// stdio): help is written to out and returned as flag.ErrHelp, which the
// caller answers with success.
func setup(fs *flag.FlagSet, groups group, args []string, getenv func(string) string, out, stderr io.Writer) (*config, *slog.Logger, []byte, error) {
	cfg, err := parseConfig(fs, groups, args, getenv, out)
	if err != nil {
		return nil, nil, nil, err
	}
	logger, cursorKey, err := cfg.prepare(stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, logger, cursorKey, nil
}

// parseConfig reads the groups' settings from the environment, then from
// args, which win, decodes and checks them (validate), and fills the derived
// defaults. For -h it writes help to out and returns flag.ErrHelp, which the
// commands turn into success.
func parseConfig(fs *flag.FlagSet, groups group, args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{getenv: getenv}
	texts := register(fs, c, groups, getenv)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(fs, out)
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w (see ticketd %s -h)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q (see ticketd %s -h)", fs.Name(), fs.Arg(0), fs.Name())
	}
	flagged := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { flagged[f.Name] = true })
	for _, s := range settings {
		t, ok := texts[s.flag]
		if !ok {
			continue
		}
		if err := s.into(c).decode(t.value); err != nil {
			if flagged[s.flag] {
				return nil, fmt.Errorf("--%s %s: %w", s.flag, t.value, err)
			}
			return nil, fmt.Errorf("%s=%q: %w", s.env, t.value, err)
		}
	}
	c.resolve()
	if err := c.validate(groups); err != nil {
		return nil, err
	}
	return c, nil
}

// register declares the groups' settings as flags of fs, each holding its
// text: the variable's if set (as a value, not as the flag's default, so
// help never prints a secret taken from the environment), else the default.
// The settings a command reads from the environment alone (envOnly) get
// their text too, and no flag. A setting whose usage names no kind, and is
// no switch, shows in help as a string flag.
func register(fs *flag.FlagSet, c *config, groups group, getenv func(string) string) map[string]*text {
	texts := make(map[string]*text)
	for _, s := range settings {
		env := ""
		if s.env != "" {
			env = getenv(s.env)
		}
		if s.group&groups == 0 {
			if envOnly[s.flag]&groups != 0 {
				texts[s.flag] = &text{value: cmp.Or(env, s.def)}
			}
			continue
		}
		usage := s.usage
		if s.env != "" {
			usage = fmt.Sprintf("%s (env %s)", s.usage, s.env)
		}
		t := &text{value: s.def, isBool: s.into(c).isBool()}
		if !t.isBool && !strings.Contains(s.usage, "`") {
			fs.StringVar(&t.value, s.flag, s.def, usage)
		} else {
			fs.Var(t, s.flag, usage)
		}
		if env != "" {
			t.value = env
		}
		texts[s.flag] = t
	}
	return texts
}

func printHelp(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprintf(out, "Usage: ticketd %s [flags]\n\nFlags (a flag overrides the environment variable named with it):\n", fs.Name())
	fs.SetOutput(out)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
