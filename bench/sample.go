package bench

import (
	"math"
	"math/bits"
)

// rng is a splitmix64 generator: tiny, fast and good enough for workloads.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n); n must be > 0.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// float returns a number in [0, 1).
func (r *rng) float() float64 {
	return float64(r.next()>>11) / (1 << 53)
}

// mix derives a seed from a seed and a few numbers.
func mix(seed uint64, xs ...uint64) uint64 {
	r := rng{seed}
	h := r.next()
	for _, x := range xs {
		r.s = h ^ (x * 0xd6e8feb86659fd93)
		h = r.next()
	}
	return h
}

// alias draws indexes with given weights in O(1) (Vose's alias method).
type alias struct {
	prob  []uint32 // keep index i when the low 32 random bits are below prob[i]
	alias []uint32
}

func newAlias(weights []float64) alias {
	n := len(weights)
	a := alias{prob: make([]uint32, n), alias: make([]uint32, n)}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	p := make([]float64, n)
	var small, large []int
	for i, w := range weights {
		p[i] = w / sum * float64(n)
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s] = uint32(math.Min(p[s]*(1<<32), math.MaxUint32))
		a.alias[s] = uint32(l)
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i] = math.MaxUint32
		a.alias[i] = uint32(i)
	}
	return a
}

func (a *alias) draw(r *rng) int {
	x := r.next()
	i := int((x >> 32) * uint64(len(a.prob)) >> 32)
	if uint32(x) < a.prob[i] {
		return i
	}
	return int(a.alias[i])
}
