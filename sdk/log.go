package sdk

// LogLevel is the level of a message passed to Log.
type LogLevel int

// Log levels the host keeps apart.
const (
	LogInfo LogLevel = iota
	LogWarn
	LogError
)
