package gendocs

import "testing"

func TestSplice(t *testing.T) {
	const begin, end = "<!-- begin -->", "<!-- end -->"
	t.Run("the table replaces what lay between the markers, the rest of the page stays", func(t *testing.T) {
		got, err := Splice([]byte("intro\n"+begin+"\n\nold\n"+end+"\noutro\n"), []byte("new\n"), begin, end)
		if err != nil {
			t.Fatal(err)
		}
		if want := "intro\n" + begin + "\n\nnew\n\n" + end + "\noutro\n"; string(got) != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	for name, page := range map[string]string{
		"a page without the first marker is refused":  "intro\n" + end + "\n",
		"a page without the second marker is refused": "intro\n" + begin + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Splice([]byte(page), []byte("new\n"), begin, end); err == nil {
				t.Error("no error")
			}
		})
	}
}
