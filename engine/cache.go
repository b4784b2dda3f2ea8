package engine

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"
)

// CacheMetaKey is the _meta key that marks an answer served from the cache:
// {"hit": true, "ageSeconds": 12.5, "ttlSeconds": 300}. Answers fetched
// from the server never carry it.
const CacheMetaKey = "mcpctl/cache"

// A cache keeps prompts/get and resources/read answers for a while. It is
// bounded by entries and bytes, least recently used first out, and
// invalidated by list_changed and resources/updated.
type cache struct {
	mu         sync.Mutex
	ll         *list.List // front: most recently used
	byKey      map[string]*list.Element
	bytes      int
	maxEntries int
	maxBytes   int
}

type cacheEntry struct {
	key, server, method, uri string
	value                    json.RawMessage
	stored                   time.Time
	ttl                      time.Duration
}

func newCache(maxEntries, maxBytes int) *cache {
	return &cache{ll: list.New(), byKey: map[string]*list.Element{}, maxEntries: maxEntries, maxBytes: maxBytes}
}

func cacheKey(server, method string, params any) string {
	p, _ := json.Marshal(params)
	return server + "\x00" + method + "\x00" + string(p)
}

// get returns a fresh answer, marked as cached.
func (c *cache) get(key string) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return nil, false
	}
	ce := el.Value.(*cacheEntry)
	age := time.Since(ce.stored)
	if age >= ce.ttl {
		c.removeLocked(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return markCached(ce.value, age, ce.ttl), true
}

// put stores an answer for ttl; a ttl of 0 means the server is not cached.
func (c *cache) put(key, server, method, uri string, value json.RawMessage, ttl time.Duration) {
	if ttl <= 0 || len(value) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		c.removeLocked(el)
	}
	ce := &cacheEntry{key: key, server: server, method: method, uri: uri, value: value, stored: time.Now(), ttl: ttl}
	c.byKey[key] = c.ll.PushFront(ce)
	c.bytes += len(value)
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.removeLocked(c.ll.Back())
	}
}

func (c *cache) removeLocked(el *list.Element) {
	ce := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.byKey, ce.key)
	c.bytes -= len(ce.value)
}

// invalidate drops a server's answers to method.
func (c *cache) invalidate(server, method string) {
	c.drop(func(ce *cacheEntry) bool { return ce.server == server && ce.method == method })
}

// invalidateURI drops a server's reads of uri.
func (c *cache) invalidateURI(server, uri string) {
	c.drop(func(ce *cacheEntry) bool { return ce.server == server && ce.uri == uri })
}

func (c *cache) drop(match func(*cacheEntry) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.ll.Front(); el != nil; {
		next := el.Next()
		if match(el.Value.(*cacheEntry)) {
			c.removeLocked(el)
		}
		el = next
	}
}

// markCached adds _meta["mcpctl/cache"] to a result object.
func markCached(v json.RawMessage, age, ttl time.Duration) json.RawMessage {
	return addMeta(v, CacheMetaKey, map[string]any{"hit": true, "ageSeconds": roundMillis(age), "ttlSeconds": ttl.Seconds()})
}

// addMeta adds _meta[key] to a result object, or takes it out when value
// is nil; v as it was when it is not one.
func addMeta(v json.RawMessage, key string, value any) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return v
	}
	var meta map[string]json.RawMessage
	json.Unmarshal(obj["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if value == nil {
		delete(meta, key)
	} else {
		meta[key], _ = marshalVerbatim(value)
	}
	// marshalVerbatim, not json.Marshal: the server's "<" and "&" stay
	// as it wrote them, as in an answer that was not cached.
	obj["_meta"], _ = marshalVerbatim(meta)
	if len(meta) == 0 {
		delete(obj, "_meta")
	}
	out, err := marshalVerbatim(obj)
	if err != nil {
		return v
	}
	return out
}
