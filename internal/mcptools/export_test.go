package mcptools

import (
	"errors"

	"github.com/ticketd/ticketd/internal/errcode"
)

// RecoverPanics lets the external tests drive the panic middleware alone.
var RecoverPanics = recoverPanics

// ErrorContent is the structured content of the tool error ticketd answers
// with code, built as every tool builds its errors.
func ErrorContent(code errcode.Code, operationID string) any {
	_, out := errorResult(code, code.Message(errors.New("the cause")), operationID, errors.New("the cause"), "")
	return out
}

// NamesOperation reports whether the named tool's input has an
// operation_id, which its errors then echo.
var NamesOperation = namesOperation

// StrictOutputSchema is the output schema every result of t is checked
// against: the advertised one before compact.
func StrictOutputSchema(t Tool) any { return t.strictOutput }
