package contract

import (
	"time"

	"github.com/ticketd/ticketd/internal/people"
)

// User is one of the tenant's people: what an assignee names.
type User struct {
	ID          string    `json:"id" jsonschema:"the token subject; pass it as assignee"`
	DisplayName string    `json:"display_name"`
	Email       string    `json:"email"`
	Active      bool      `json:"active" jsonschema:"only active users can be assigned"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// FromUsers converts users; never nil.
func FromUsers(us []people.User) []User {
	out := make([]User, len(us))
	for i, u := range us {
		out[i] = FromUser(u)
	}
	return out
}

// FromUser converts a user.
func FromUser(u people.User) User {
	return User{ID: u.ID, DisplayName: u.DisplayName, Email: u.Email, Active: u.Active, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// UserList is a list of users.
type UserList struct {
	Users []User `json:"users"`
}

// NewUser is the body that adds a user.
type NewUser struct {
	ID          string `json:"id" jsonschema:"the person's token subject"`
	DisplayName string `json:"display_name,omitempty"`
	Email       string `json:"email,omitempty"`
}

// UserPatch is the body that changes a user; absent fields stay.
type UserPatch struct {
	DisplayName *string `json:"display_name,omitempty"`
	Email       *string `json:"email,omitempty"`
	Active      *bool   `json:"active,omitempty" jsonschema:"false: no longer assignable"`
}
