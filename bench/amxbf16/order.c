// TDPBF16PS against seven emulated accumulation orders (see README.md).
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <math.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

typedef struct { uint8_t palette, start; uint8_t rsv[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg_t;

static float bf(uint16_t h){ uint32_t u=(uint32_t)h<<16; if(((h>>7)&0xff)==0) u&=0x80000000u; float f; memcpy(&f,&u,4); return f; }
static float ftz(float v){ uint32_t u; memcpy(&u,&v,4); if((u&0x7f800000u)==0) u&=0x80000000u; memcpy(&v,&u,4); return v; }
static uint16_t rbf(void){ // random bf16 with varied exponent, some subnormals
  uint16_t s = rand()&1; int e = 127 + (rand()%40) - 20; if (rand()%50==0) e = 0; uint16_t m = rand()&0x7f;
  return (s<<15)|((e&0xff)<<7)|m; }

int main(){
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) { printf("no amx\n"); return 1; }
  cfg_t cfg; memset(&cfg,0,sizeof cfg); cfg.palette=1;
  for(int i=0;i<3;i++){ cfg.colsb[i]=64; cfg.rows[i]=16; }
  _tile_loadconfig(&cfg);
  static uint16_t A[16][32], B[16][32]; static float C[16][16], C0[16][16];
  int bad[7]={0}; long tot=0;
  for(int trial=0; trial<2000; trial++){
    for(int m=0;m<16;m++) for(int k=0;k<32;k++) A[m][k]=rbf();
    for(int k=0;k<16;k++) for(int n=0;n<32;n++) B[k][n]=rbf();
    for(int m=0;m<16;m++) for(int n=0;n<16;n++) C0[m][n] = (trial%2)? bf(rbf())*3.f : 0.f;
    memcpy(C,C0,sizeof C);
    _tile_loadd(0, C, 64); _tile_loadd(1, A, 64); _tile_loadd(2, B, 64);
    _tile_dpbf16ps(0,1,2);
    _tile_stored(0, C, 64);
    for(int m=0;m<16;m++) for(int n=0;n<16;n++){
      float e[7];
      // 0: odd first, each step rounded+ftz ; 1: even first ; 2: pair sum in double then one rounding per pair ; 3: all in double one rounding
      float o=C0[m][n], v=C0[m][n]; double p2=C0[m][n]; float q=C0[m][n]; double all=C0[m][n];
      for(int kk=0;kk<16;kk++){
        float a0=bf(A[m][2*kk]), a1=bf(A[m][2*kk+1]), b0=bf(B[kk][2*n]), b1=bf(B[kk][2*n+1]);
        o = ftz(o + a1*b1); o = ftz(o + a0*b0);
        v = ftz(v + a0*b0); v = ftz(v + a1*b1);
        q = ftz((float)((double)q + (double)(a0*b0) + (double)(a1*b1)));
        all += (double)(a0*b0) + (double)(a1*b1);
      }
      // variants: 4: no ftz odd-first; 5: products summed in f32 from 0 (even,odd order), C added last; 6: pairwise: each pair's two products summed exactly (double) rounded to f32 then added to C rounded
      float o2=C0[m][n], s5=0.f, c6=C0[m][n];
      for(int kk=0;kk<16;kk++){
        float a0=bf(A[m][2*kk]), a1=bf(A[m][2*kk+1]), b0=bf(B[kk][2*n]), b1=bf(B[kk][2*n+1]);
        o2 = o2 + a1*b1; o2 = o2 + a0*b0;
        s5 = s5 + a0*b0; s5 = s5 + a1*b1;
        c6 = ftz(c6 + ftz((float)((double)(a0*b0) + (double)(a1*b1))));
      }
      e[0]=o; e[1]=v; e[2]=q; e[3]=ftz((float)all); e[4]=o2; e[5]=ftz(C0[m][n]+s5); e[6]=c6;
      for(int i=0;i<7;i++){ if (memcmp(&e[i], &C[m][n], 4)) bad[i]++; }
      tot++;
    }
  }
  _tile_release();
  printf("outputs %ld mismatches:", tot); for(int i=0;i<7;i++) printf(" v%d=%d", i, bad[i]); printf("\n");
  return 0;
}
