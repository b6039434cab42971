package main

import (
	"os"
	"strings"
	"testing"
)

// settingsTableHeader heads docs/operators.md's table of every setting.
const settingsTableHeader = "| variable | flag | default | meaning |"

// TestSettingsTableListsEverySetting keeps docs/operators.md's settings
// table in step with settings, the one list the flags and help come from:
// every setting has its row, variable and flag side by side, and every row
// naming a TICKETD_ variable is a setting with that flag, so a setting
// added, renamed or retired without its row fails here.
func TestSettingsTableListsEverySetting(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, settingsTableHeader+"\n")
	if start < 0 {
		t.Fatalf("docs/operators.md has no table headed %q", settingsTableHeader)
	}
	table, _, _ := strings.Cut(doc[start:], "\n\n")
	rows := map[string]string{} // variable (or "—") and flag → the row
	for _, line := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Fatalf("settings table row %q has fewer than four cells", line)
		}
		env, flag := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`"), strings.Trim(cells[1], "`")
		rows[env+" "+flag] = line
		if strings.HasPrefix(env, "TICKETD_") && !isSetting(env, strings.TrimPrefix(flag, "--")) {
			t.Errorf("docs/operators.md lists %s %s, which is not a setting (cmd/ticketd/config.go)", env, flag)
		}
	}
	for _, s := range settings {
		env := s.env
		if env == "" {
			env = "—"
		}
		if _, ok := rows[env+" --"+s.flag]; !ok {
			t.Errorf("docs/operators.md's settings table lacks the row of %s --%s", env, s.flag)
		}
	}
}

func isSetting(env, flag string) bool {
	for _, s := range settings {
		if s.env == env && s.flag == flag {
			return true
		}
	}
	return false
}
