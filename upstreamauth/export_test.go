package upstreamauth

// Cached is how many tokens c keeps.
func (c *Client) Cached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tokens)
}
