"""The numba loops of the graph colorings (adcore_sparsity.coloring is their interface).

A graph is given as two CSR-like index structures (a_ptr, a_idx) and (b_ptr, b_idx): the
neighbours of vertex v are the union over r in a[v] of b[r], v itself left out. With a = the
pattern's columns (CSC: column -> rows) and b = its rows (CSR: row -> columns) that is the column
intersection graph, in which partial distance-2 coloring of the bipartite graph is distance-1
coloring (Gebremedhin, Manne & Pothen, SIAM Review 47(4), 2005, section 3.3) and is computed
without building the graph; with a = the adjacency lists and b = the identity it is the graph itself.
Every kernel marks visited vertices with the number of the vertex being processed, so no array is
cleared between vertices. Index arrays are int64 and writeable: one compile per kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def degrees(a_ptr, a_idx, b_ptr, b_idx, n):
    """The number of distinct neighbours of each vertex."""
    mark = np.full(n, -1, dtype=np.int64)
    degree = np.zeros(n, dtype=np.int64)
    for v in range(n):
        mark[v] = v
        count = 0
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            for q in range(b_ptr[r], b_ptr[r + 1]):
                w = b_idx[q]
                if mark[w] != v:
                    mark[w] = v
                    count += 1
        degree[v] = count
    return degree


@njit(cache=True)
def largest_first(a_ptr, a_idx, b_ptr, bipartite):
    """The vertices by decreasing degree, ties to the lower number (a counting sort), and the largest
    degree. In a column intersection graph (bipartite) a column's degree is counted with multiplicity,
    sum over its rows of (count - 1): an upper bound found in O(nnz); in a graph it is exact."""
    n = a_ptr.size - 1
    degree = np.zeros(n, dtype=np.int64)
    for v in range(n):
        d = 0
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            d += b_ptr[r + 1] - b_ptr[r] - 1 if bipartite else 1
        degree[v] = d
    top = degree.max() if n > 0 else 0
    start = np.zeros(top + 2, dtype=np.int64)
    for v in range(n):
        start[top - degree[v] + 1] += 1
    for k in range(top + 1):
        start[k + 1] += start[k]
    order = np.empty(n, dtype=np.int64)
    for v in range(n):
        k = top - degree[v]
        order[start[k]] = v
        start[k] += 1
    return order, top


@njit(cache=True)
def dynamic_order(a_ptr, a_idx, b_ptr, b_idx, n, smallest_last):
    """smallest_last: repeatedly remove a vertex of least degree among those left, and order them
    in reverse of removal (Matula & Beck 1983). Otherwise incidence_degree: repeatedly take a vertex
    with the most neighbours already taken. Both keep the vertices in buckets by their current
    degree (doubly linked lists), so each step and each degree update costs O(1)."""
    if smallest_last:
        key = degrees(a_ptr, a_idx, b_ptr, b_idx, n)
    else:
        key = np.zeros(n, dtype=np.int64)
    top = n + 1
    head = np.full(top, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    for v in range(n - 1, -1, -1):  # lower vertex numbers first within a bucket
        k = key[v]
        nxt[v] = head[k]
        if head[k] >= 0:
            prv[head[k]] = v
        head[k] = v
    done = np.zeros(n, dtype=np.bool_)
    mark = np.full(n, -1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    cursor = 0
    for step in range(n):
        if smallest_last:
            while head[cursor] < 0:
                cursor += 1
        else:
            while cursor > 0 and head[cursor] < 0:
                cursor -= 1
            while head[cursor] < 0:  # only when every bucket below is empty too
                cursor += 1
        v = head[cursor]
        head[cursor] = nxt[v]
        if nxt[v] >= 0:
            prv[nxt[v]] = -1
        done[v] = True
        order[step] = v
        mark[v] = v
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            for q in range(b_ptr[r], b_ptr[r + 1]):
                w = b_idx[q]
                if mark[w] == v or done[w]:
                    continue
                mark[w] = v
                k = key[w]  # unlink w from bucket k
                if prv[w] >= 0:
                    nxt[prv[w]] = nxt[w]
                else:
                    head[k] = nxt[w]
                if nxt[w] >= 0:
                    prv[nxt[w]] = prv[w]
                k = k - 1 if smallest_last else k + 1
                key[w] = k
                prv[w] = -1
                nxt[w] = head[k]
                if head[k] >= 0:
                    prv[head[k]] = w
                head[k] = w
                if smallest_last:
                    cursor = min(cursor, k)
                else:
                    cursor = max(cursor, k)
    if smallest_last:
        return order[::-1].copy()
    return order


@njit(cache=True)
def greedy(order, a_ptr, a_idx, b_ptr, b_idx, n):
    """Greedy distance-1 coloring in the given order: each vertex takes the smallest color no
    neighbour has (GMP 2005, Algorithm 3.1 for the column intersection graph)."""
    color = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    for v in order:
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            for q in range(b_ptr[r], b_ptr[r + 1]):
                w = b_idx[q]
                if w != v and color[w] >= 0:
                    forbidden[color[w]] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
    return color


@njit(cache=True)
def greedy_by_rows(order, a_ptr, a_idx, n_rows, max_words):
    """The same coloring as `greedy` for a column intersection graph (a = column -> rows), kept as one
    bitset per row of the colors its columns already have: a column's forbidden colors are the OR of
    its rows' bitsets, so coloring costs O(nnz x words) instead of O(sum of squared row counts).
    The bitsets start one 64-bit word wide and double when the colors outgrow them; past
    `max_words` words per row it gives up and returns an empty array (the caller uses `greedy`)."""
    n = a_ptr.size - 1
    color = np.full(n, -1, dtype=np.int64)
    words = 1
    used = np.zeros((n_rows, words), dtype=np.uint64)
    forbidden = np.zeros(words, dtype=np.uint64)
    full = ~np.uint64(0)
    one = np.uint64(1)
    for v in order:
        forbidden[:] = 0
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            for k in range(words):
                forbidden[k] |= used[r, k]
        k = 0
        while k < words and forbidden[k] == full:
            k += 1
        if k == words:  # every color so far is taken: the next one needs another word
            if 2 * words > max_words:
                return np.empty(0, dtype=np.int64)
            grown = np.zeros((n_rows, 2 * words), dtype=np.uint64)
            grown[:, :words] = used
            used = grown
            forbidden = np.zeros(2 * words, dtype=np.uint64)
            words *= 2
            c = k * 64
        else:
            free = ~forbidden[k]
            bit = 0
            while not (free >> np.uint64(bit)) & one:
                bit += 1
            c = k * 64 + bit
        color[v] = c
        mask = one << np.uint64(c & 63)
        for p in range(a_ptr[v], a_ptr[v + 1]):
            used[a_idx[p], c >> 6] |= mask
    return color


@njit(cache=True)
def _sift_up(keys, verts, rank, i):
    """Restore the max-heap (key, then the lower rank) above position i."""
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] > keys[i] or (keys[parent] == keys[i] and rank[verts[parent]] < rank[verts[i]]):
            return
        keys[parent], keys[i] = keys[i], keys[parent]
        verts[parent], verts[i] = verts[i], verts[parent]
        i = parent


@njit(cache=True)
def _sift_down(keys, verts, rank, size):
    """Restore the max-heap below its root."""
    i = 0
    while True:
        best = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and (
                keys[child] > keys[best]
                or (keys[child] == keys[best] and rank[verts[child]] < rank[verts[best]])
            ):
                best = child
        if best == i:
            return
        keys[best], keys[i] = keys[i], keys[best]
        verts[best], verts[i] = verts[i], verts[best]
        i = best


@njit(cache=True)
def dsatur(a_ptr, a_idx, b_ptr, b_idx, n, words, rank):
    """Greedy distance-1 coloring that next colors the vertex whose colored neighbours show the most
    distinct colors (its saturation), ties to the larger degree, then the lower rank (Brélaz,
    "New methods to color the vertices of a graph", CACM 22(4), 1979). `words` 64-bit words per
    vertex hold the colors its neighbours have (at least (largest degree + 1) / 64). The vertices
    wait in a max-heap whose stale entries are skipped when popped."""
    degree = degrees(a_ptr, a_idx, b_ptr, b_idx, n)
    scale = degree.max() + 1 if n > 0 else 1
    seen = np.zeros((n, words), dtype=np.uint64)
    saturation = np.zeros(n, dtype=np.int64)
    color = np.full(n, -1, dtype=np.int64)
    capacity = 2 * n + 16
    keys = np.empty(capacity, dtype=np.int64)
    verts = np.empty(capacity, dtype=np.int64)
    size = 0
    for v in range(n):
        keys[size] = degree[v]
        verts[size] = v
        size += 1
        _sift_up(keys, verts, rank, size - 1)
    one = np.uint64(1)
    for _ in range(n):
        while True:
            key, v = keys[0], verts[0]
            size -= 1
            keys[0], verts[0] = keys[size], verts[size]
            _sift_down(keys, verts, rank, size)
            if color[v] < 0 and key == saturation[v] * scale + degree[v]:
                break
        c = 0
        while (seen[v, c >> 6] >> np.uint64(c & 63)) & one:
            c += 1
        color[v] = c
        word, bit = c >> 6, one << np.uint64(c & 63)
        for p in range(a_ptr[v], a_ptr[v + 1]):
            r = a_idx[p]
            for q in range(b_ptr[r], b_ptr[r + 1]):
                w = b_idx[q]
                if color[w] >= 0 or seen[w, word] & bit:
                    continue
                seen[w, word] |= bit
                saturation[w] += 1
                if size == capacity:
                    capacity *= 2
                    keys = np.concatenate((keys, np.empty(capacity - size, dtype=np.int64)))
                    verts = np.concatenate((verts, np.empty(capacity - size, dtype=np.int64)))
                keys[size] = saturation[w] * scale + degree[w]
                verts[size] = w
                size += 1
                _sift_up(keys, verts, rank, size - 1)
    return color


@njit(cache=True)
def star(order, ptr, idx, n):
    """Greedy star coloring of the graph with adjacency lists (ptr, idx), no self-loops: a distance-1
    coloring in which every path on four vertices uses at least three colors (GMP 2005, Algorithm
    4.1, StarColoringAlg1). Coloring v, a color c is forbidden when
    - a neighbour w has c (distance-1);
    - w is a neighbour not colored yet and x a colored neighbour of w: c = color[x] would let w
      later complete a two-colored path through v, w, x;
    - w is a colored neighbour, x a colored neighbour of w (x != v) with c = color[x], and x has
      another colored neighbour y (y != w) with color[y] == color[w]: v, w, x, y would be a path
      on four vertices in two colors."""
    color = np.full(n, -1, dtype=np.int64)
    forbidden = np.full(n + 1, -1, dtype=np.int64)
    for v in order:
        for p in range(ptr[v], ptr[v + 1]):
            w = idx[p]
            if color[w] >= 0:
                forbidden[color[w]] = v
        for p in range(ptr[v], ptr[v + 1]):
            w = idx[p]
            for q in range(ptr[w], ptr[w + 1]):
                x = idx[q]
                if x == v or color[x] < 0 or forbidden[color[x]] == v:
                    continue
                if color[w] < 0:
                    forbidden[color[x]] = v
                else:
                    for s in range(ptr[x], ptr[x + 1]):
                        y = idx[s]
                        if y != w and color[y] == color[w]:
                            forbidden[color[x]] = v
                            break
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
    return color


@njit(cache=True)
def greedy_clique(ptr, idx, n):
    """The size of the largest clique found by growing one greedily from each vertex through its
    neighbours (idx sorted within each row): a lower bound on any distance-1 coloring's colors."""
    best = 1 if n > 0 else 0
    clique = np.empty(n, dtype=np.int64)
    for v in range(n):
        if ptr[v + 1] - ptr[v] + 1 <= best:
            continue
        size = 1
        clique[0] = v
        for p in range(ptr[v], ptr[v + 1]):
            u = idx[p]
            if ptr[u + 1] - ptr[u] < size:
                continue
            joined = True
            for t in range(size):
                w = clique[t]
                k = np.searchsorted(idx[ptr[u] : ptr[u + 1]], w)
                if k == ptr[u + 1] - ptr[u] or idx[ptr[u] + k] != w:
                    joined = False
                    break
            if joined:
                clique[size] = u
                size += 1
        best = max(best, size)
    return best


@njit(cache=True)
def is_star_forest(ptr, idx, n):
    """Whether every connected component is a star (no path on four vertices and no triangle):
    exactly the graphs a star coloring can color with two colors."""
    for v in range(n):
        dv = ptr[v + 1] - ptr[v]
        for p in range(ptr[v], ptr[v + 1]):
            w = idx[p]
            if dv > 1 and ptr[w + 1] - ptr[w] > 1:  # an edge between two vertices of degree >= 2
                return False
    return True
