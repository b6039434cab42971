package mcptools

// RecoverPanics lets the external tests drive the panic middleware alone.
var RecoverPanics = recoverPanics
