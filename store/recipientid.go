package store

// maxRecipientID bounds a recipient id.
const maxRecipientID = 128

// RecipientIDGrammar says what a recipient id is, for error messages.
const RecipientIDGrammar = "want 1-128 of letters, digits and . _ - : @"

// ValidRecipientID reports whether s is a recipient id: 1 to 128 bytes of
// letters, digits and . _ - : @. It is the grammar of RecipientRecord.ID
// and Recipient.ID, which every component that takes a recipient id
// checks here.
func ValidRecipientID(s string) bool {
	if len(s) == 0 || len(s) > maxRecipientID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@':
		default:
			return false
		}
	}
	return true
}
