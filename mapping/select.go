package mapping

// Choosing the skill a message is for.

import (
	"fmt"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// MetadataSkillKey is the message metadata key that names a skill.
const MetadataSkillKey = "skill"

// Select picks the skill msg is for, in this order: the skill its metadata
// names under "skill"; else the first skill, in file order, whose match
// predicate holds for the message (so the declared order settles a message
// that several predicates claim); else the only skill, when there is one.
// A predicate that fails at run time counts as not matching.
func (s *Skills) Select(msg *a2a.Message) (*Skill, *SelectionError) {
	sk, _, err := s.SelectWithReason(msg)
	return sk, err
}

// SelectReason says which rule of Select chose a skill.
type SelectReason uint8

const (
	// NotSelected: no rule chose a skill.
	NotSelected SelectReason = iota
	// SelectedByName: the message's metadata named the skill.
	SelectedByName
	// SelectedByMatch: the skill's match predicate held, and no earlier
	// skill's did.
	SelectedByMatch
	// SelectedAsOnlySkill: the file has just one skill (its match, if
	// any, is not consulted).
	SelectedAsOnlySkill
)

var selectReasonNames = [...]string{NotSelected: "not selected", SelectedByName: "named in metadata.skill",
	SelectedByMatch: "its match predicate holds", SelectedAsOnlySkill: "the only skill"}

func (r SelectReason) String() string {
	if int(r) < len(selectReasonNames) {
		return selectReasonNames[r]
	}
	return "unknown"
}

// SelectWithReason is Select, also saying which rule chose the skill: for
// tools that explain a choice (the dry run). It costs what Select costs.
func (s *Skills) SelectWithReason(msg *a2a.Message) (*Skill, SelectReason, *SelectionError) {
	if msg != nil {
		if v, ok := msg.Metadata[MetadataSkillKey]; ok {
			id, isString := v.(string)
			if sk := s.byID[id]; isString && sk != nil {
				return sk, SelectedByName, nil
			}
			return nil, NotSelected, s.selectionError(fmt.Sprint(v), true)
		}
	}
	if len(s.skills) == 1 {
		return s.skills[0], SelectedAsOnlySkill, nil
	}
	if msg != nil && len(s.matching) > 0 {
		if sk := s.matchSkill(msg); sk != nil {
			return sk, SelectedByMatch, nil
		}
	}
	return nil, NotSelected, s.selectionError("", false)
}

// matchSkill runs the match predicates in file order.
func (s *Skills) matchSkill(msg *a2a.Message) *Skill {
	m := s.getVM()
	vars := varsPool.Get().(*exprVars)
	defer func() {
		*vars = exprVars{}
		varsPool.Put(vars)
		s.vms.Put(m)
	}()
	bindMessage(vars, msg, s.matchNeeds)
	for _, sk := range s.matching {
		vars.Config = sk.config
		if v, err := m.Run(sk.match, vars); err == nil && v == true {
			return sk
		}
	}
	return nil
}

func (s *Skills) selectionError(requested string, named bool) *SelectionError {
	ids := make([]string, len(s.skills))
	for i, sk := range s.skills {
		ids[i] = sk.ID
	}
	return &SelectionError{Requested: requested, Named: named, Skills: ids}
}

// SelectionError says that a message is for none of the skills.
type SelectionError struct {
	// Requested is what metadata.skill held (formatted), when Named.
	Requested string
	// Named reports whether the message named a skill at all.
	Named bool
	// Skills are the ids of every skill, in file order.
	Skills []string
}

func (e *SelectionError) Error() string {
	var b strings.Builder
	if e.Named {
		fmt.Fprintf(&b, "there is no skill %q; ", e.Requested)
	} else {
		b.WriteString("the message does not say which skill it is for; ")
	}
	if len(e.Skills) == 0 {
		b.WriteString("no skill is available to this caller")
		return b.String()
	}
	fmt.Fprintf(&b, "the skills are: %s. Name one in the message metadata, e.g. \"metadata\": {%q: %q}",
		strings.Join(e.Skills, ", "), MetadataSkillKey, e.Skills[0])
	return b.String()
}
