
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

ErfErfx*
T0

ErfcErfcx*
T0

erf_1IdentityErf*
T0
!
erfc_1IdentityErfc*
T0"ª