package core

// StatePath is the shortest walk of legal transitions in table from from to
// to, from excluded and to included; nil when from is to, when from is
// terminal, or when to cannot be reached. A receiver of at-least-once
// reports uses it to catch up when reports were lost on the way (a command
// reported succeeded while still recorded as sent): each step is a real
// transition with its own event, so no state is skipped silently.
func StatePath(table StateTable, from, to State) []State {
	if from == to || table.Terminal[from] {
		return nil
	}
	prev := map[State]State{from: from}
	queue := []State{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, next := range table.Next[cur] {
			if _, seen := prev[next]; seen {
				continue
			}
			prev[next] = cur
			if next == to {
				var path []State
				for s := to; s != from; s = prev[s] {
					path = append([]State{s}, path...)
				}
				return path
			}
			queue = append(queue, next)
		}
	}
	return nil
}
