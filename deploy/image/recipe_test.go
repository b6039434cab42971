package image

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRecipesAgree keeps the three descriptions of the image in step: the
// Dockerfile's final stage (for builders that reach Docker Hub) sets up the
// image as the Containerfile `make image` uses does, and docker-compose.yml
// runs, by default, the tag `make image` gives it.
func TestRecipesAgree(t *testing.T) {
	t.Parallel()
	want := finalStage(t, "Containerfile")
	if got := finalStage(t, "../../Dockerfile"); !slices.Equal(got, want) {
		t.Errorf("the Dockerfile's FROM scratch stage sets\n%s\nthe Containerfile sets\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	makefile := read(t, "../../Makefile")
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no IMAGE ?= default")
	}
	compose := read(t, "../../docker-compose.yml")
	images := regexp.MustCompile(`(?m)^    image: (.+)$`).FindAllStringSubmatch(compose, -1)
	var ticketd int
	for _, img := range images {
		if strings.HasPrefix(img[1], "postgres:") {
			continue
		}
		ticketd++
		if img[1] != "${TICKETD_IMAGE:-"+m[1]+"}" {
			t.Errorf("docker-compose.yml runs image %s, want ${TICKETD_IMAGE:-%s} (make image's tag)", img[1], m[1])
		}
	}
	if ticketd != 2 {
		t.Errorf("docker-compose.yml names %d ticketd images, want 2 (ticketd, ticketd-ha)", ticketd)
	}
}

// finalStage is what a recipe's FROM scratch stage sets, instruction by
// instruction with continuation lines joined, leaving out comments and the
// COPYs (whose sources differ: a build stage or the script's context).
func finalStage(t *testing.T, path string) []string {
	t.Helper()
	text := read(t, path)
	i := strings.LastIndex(text, "\nFROM scratch\n")
	if i < 0 {
		t.Fatalf("%s has no FROM scratch stage", path)
	}
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text[i:], "\\\n", " "), "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "COPY ") {
			continue
		}
		out = append(out, line)
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
