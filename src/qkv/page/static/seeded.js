// Standard normal numbers drawn from a seed, the same as Python's
// qkv.page.explorables.seeded_normal (to about 1e-15): the 32-bit generator
// mulberry32, turned into normal numbers by the Box-Muller transform.
// qkvSeededNormal(seed, count) gives a Float64Array of count numbers.

// qkvMulberry32(seed) gives the generator itself: uniform numbers in (0, 1).

/* exported qkvSeededNormal, qkvMulberry32 */

function qkvMulberry32(seed) {  // mulberry32: uniform numbers in (0, 1)
  var a = seed | 0;
  return function () {
    a = a + 0x6D2B79F5 | 0;
    var t = Math.imul(a ^ a >>> 15, 1 | a);
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
    return (((t ^ t >>> 14) >>> 0) + 0.5) / 4294967296;
  };
}

function qkvSeededNormal(seed, count) {
  var next = qkvMulberry32(seed), out = new Float64Array(count);
  for (var i = 0; i < count; i += 2) {  // Box-Muller
    var radius = Math.sqrt(-2 * Math.log(next())), angle = 2 * Math.PI * next();
    out[i] = radius * Math.cos(angle);
    if (i + 1 < count) { out[i + 1] = radius * Math.sin(angle); }
  }
  return out;
}
