package webhooks_test

import (
	"testing"

	"github.com/ticketd/ticketd/internal/webhooks"
)

// TestSignMatchesTheStandardWebhooksVector checks interoperability with
// every Standard Webhooks library through the specification's example.
func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	got, err := webhooks.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if _, err := webhooks.Sign("whsec_not base64!", "id", 1, nil); err == nil {
		t.Error("a malformed secret signed without error")
	}
}
