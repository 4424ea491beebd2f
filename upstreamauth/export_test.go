package upstreamauth

// Cached is how many tokens c keeps.
func (c *Client) Cached() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tokens)
}

// AwaitFetches returns once the fetches under way when it is called are done.
func (c *Client) AwaitFetches() {
	c.mu.Lock()
	var under []*flight
	for _, f := range c.flights {
		under = append(under, f)
	}
	c.mu.Unlock()
	for _, f := range under {
		<-f.done
	}
}
