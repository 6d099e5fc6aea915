// VDPBF16PS against the odd-first emulation of its step (see README.md).
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
static float bf(uint16_t h){ uint32_t u=(uint32_t)h<<16; if(((h>>7)&0xff)==0) u&=0x80000000u; float f; memcpy(&f,&u,4); return f; }
static float ftz(float v){ uint32_t u; memcpy(&u,&v,4); if((u&0x7f800000u)==0) u&=0x80000000u; memcpy(&v,&u,4); return v; }
static uint16_t rbf(void){ uint16_t s = rand()&1; int e = 127 + (rand()%40) - 20; if (rand()%50==0) e = 0; uint16_t m = rand()&0x7f; return (s<<15)|((e&0xff)<<7)|m; }
int main(){ long bad=0, tot=0;
  for(int t=0;t<100000;t++){ uint16_t a[32], b[32]; float c[16], r[16];
    for(int i=0;i<32;i++){a[i]=rbf(); b[i]=rbf();} for(int i=0;i<16;i++) c[i]=(t%2)?bf(rbf())*3.f:0.f;
    __m512 acc=_mm512_loadu_ps(c); __m512bh va, vb; memcpy(&va,a,64); memcpy(&vb,b,64);
    acc=_mm512_dpbf16_ps(acc, va, vb); _mm512_storeu_ps(r, acc);
    for(int l=0;l<16;l++){ float o=c[l]; o=ftz(o+bf(a[2*l+1])*bf(b[2*l+1])); o=ftz(o+bf(a[2*l])*bf(b[2*l])); if(memcmp(&o,&r[l],4)) bad++; tot++; } }
  printf("vdpbf16ps vs odd-first emulation: %ld of %ld differ\n", bad, tot); }
