package mapping

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
	if msg != nil {
		if v, ok := msg.Metadata[MetadataSkillKey]; ok {
			id, isString := v.(string)
			if sk := s.byID[id]; isString && sk != nil {
				return sk, nil
			}
			return nil, s.selectionError(fmt.Sprint(v), true)
		}
	}
	if len(s.skills) == 1 {
		return s.skills[0], nil
	}
	if msg != nil && len(s.matching) > 0 {
		if sk := s.matchSkill(msg); sk != nil {
			return sk, nil
		}
	}
	return nil, s.selectionError("", false)
}

// matchSkill runs the match predicates in file order.
func (s *Skills) matchSkill(msg *a2a.Message) *Skill {
	m := s.getVM()
	e := envPool.Get().(*env)
	defer func() {
		*e = env{}
		envPool.Put(e)
		s.vms.Put(m)
	}()
	bindMessage(e, msg, s.matchNeeds)
	for _, sk := range s.matching {
		e.Config = sk.config
		if v, err := m.Run(sk.match, e); err == nil && v == true {
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
	fmt.Fprintf(&b, "the skills are: %s. Name one in the message metadata, e.g. \"metadata\": {%q: %q}",
		strings.Join(e.Skills, ", "), MetadataSkillKey, e.Skills[0])
	return b.String()
}
