/**
 * ResNet-50-shaped JSON request bodies for the codec benches: FP32 pixels
 * normalised the ImageNet way ((p/255 − mean)/std, so in about [−2.1, 2.6])
 * and written with 4 decimals, as a client that rounds its floats sends them.
 * 150528 elements ([1,3,224,224]) make a body of about 1.1 MB.
 */
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];

/** `{"inputs":[{"name":"input","datatype":"FP32","shape":[1,3,224,224] or [1,n],"data":[...]}]}` */
export function imageTensorJson(seed: number, elements = 3 * 224 * 224): Buffer {
  let x = (seed * 2654435761) >>> 0;
  const plane = Math.ceil(elements / 3);
  const data = new Array<number>(elements);
  for (let i = 0; i < elements; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const c = Math.min(2, Math.floor(i / plane));
    data[i] = Math.round((((x >>> 24) / 255 - MEAN[c]) / STD[c]) * 1e4) / 1e4;
  }
  const shape = elements === 3 * 224 * 224 ? [1, 3, 224, 224] : [1, elements];
  return Buffer.from(JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape, data }] }));
}
