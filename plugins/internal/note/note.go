package note

import "unicode/utf8"

// Max is how many bytes of someone else's text a note keeps.
const Max = 64

// Clip keeps s to Max bytes, cut on a character boundary, with "…" when
// it cut.
func Clip(s string) string {
	if len(s) <= Max {
		return s
	}
	i := Max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
